/**
 * Every command, with the one line `notarize --help` shows. A command's
 * module (and what it imports: zod, undici...) is loaded only when that
 * command runs or its help is asked for, which keeps start-up fast.
 */
import type { CommandEntry } from './command.js';

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'register',
    summary: 'hash a file and notarize it (request, then complete)',
    load: () => import('./register.js'),
  },
  { name: 'complete', summary: 'complete a pending registration', load: () => import('./complete.js') },
  { name: 'pending', summary: 'list registrations saved but not yet completed', load: () => import('./pending.js') },
  {
    name: 'hash',
    summary: 'print SHA-256 digests in sha256sum format (nothing is sent)',
    load: () => import('./hash.js'),
    usesStore: false,
  },
  {
    name: 'verify',
    summary: 'check documents against their receipts or the local ledger (no network)',
    load: () => import('./verify.js'),
  },
  { name: 'list', summary: 'list the local ledger of completed notarizations', load: () => import('./list.js') },
  { name: 'show', summary: 'show one record of the local ledger', load: () => import('./show.js') },
  {
    name: 'receipt',
    summary: 'print the receipt of a ledger entry (to verify anywhere)',
    load: () => import('./receipt.js'),
  },
  { name: 'login', summary: 'exchange an API key for a token and store it', load: () => import('./login.js') },
  { name: 'logout', summary: 'forget the stored token', load: () => import('./logout.js') },
  { name: 'config', summary: 'read and change settings', load: () => import('./config.js') },
  {
    name: 'sandbox',
    summary: 'run a local emulator of the service',
    load: () => import('./sandbox.js'),
    usesStore: false,
  },
  {
    name: 'completion',
    summary: 'print a shell completion script (bash, zsh, fish)',
    load: () => import('./completion.js'),
    usesStore: false,
  },
];
