/**
 * `notarize completion bash|zsh|fish`: a completion script generated from the
 * command registry and each command's real options, so it cannot drift from
 * the CLI.
 */
import { Command, type Option } from 'commander';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { COMMANDS } from './registry.js';
import { examples } from './options.js';

interface CommandSpec {
  name: string;
  summary: string;
  options: { flags: string[]; description: string }[];
  subcommands: string[];
}

const GLOBAL_FLAGS = ['--base-url', '--json', '--quiet', '--verbose', '--timeout', '--retries', '--help'];

function optionSpec(option: Option) {
  return { flags: [option.long, option.short].filter((f): f is string => Boolean(f)), description: option.description };
}

/** Every command with its options, from the registry. */
async function commandSpecs(): Promise<CommandSpec[]> {
  const noContext = (): Context => {
    throw new Error('completion specs never run commands');
  };
  return Promise.all(
    COMMANDS.map(async (entry) => {
      const command = new Command(entry.name);
      (await entry.load()).configure(command, noContext);
      return {
        name: entry.name,
        summary: entry.summary,
        options: command.options.map(optionSpec),
        subcommands: command.commands.map((c) => c.name()),
      };
    }),
  );
}

function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function bash(specs: CommandSpec[]): string {
  const cases = specs
    .map((s) => `    ${s.name}) opts=${quote([...s.options.flatMap((o) => o.flags), ...s.subcommands].join(' '))} ;;`)
    .join('\n');
  return `# bash completion for notarize: eval "$(notarize completion bash)"
_notarize() {
  local cur=\${COMP_WORDS[COMP_CWORD]} opts=''
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W ${quote([...specs.map((s) => s.name), '--help', '--version'].join(' '))} -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts ${GLOBAL_FLAGS.join(' ')}" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o default -F _notarize notarize
`;
}

function zsh(specs: CommandSpec[]): string {
  const describe = specs.map((s) => `    ${quote(`${s.name}:${s.summary}`)}`).join('\n');
  const cases = specs
    .map((s) => {
      const args = s.options.flatMap((o) => o.flags.map((f) => quote(`${f}[${o.description.replace(/[[\]']/g, '')}]`)));
      const subs = s.subcommands.length > 0 ? ` ${quote(`1:subcommand:(${s.subcommands.join(' ')})`)}` : '';
      return `    ${s.name}) _arguments ${args.join(' ')}${subs} '*:file:_files' ;;`;
    })
    .join('\n');
  return `#compdef notarize
# zsh completion for notarize: notarize completion zsh > "\${fpath[1]}/_notarize"
_notarize() {
  local -a commands
  commands=(
${describe}
  )
  if (( CURRENT == 2 )); then
    _describe 'command' commands
    return
  fi
  local cmd=\${words[2]}
  shift words; (( CURRENT-- ))
  case $cmd in
${cases}
  esac
}
compdef _notarize notarize
`;
}

function fish(specs: CommandSpec[]): string {
  const lines = [
    '# fish completion for notarize: notarize completion fish > ~/.config/fish/completions/notarize.fish',
    'complete -c notarize -f',
  ];
  for (const s of specs) {
    lines.push(`complete -c notarize -n __fish_use_subcommand -a ${s.name} -d ${quote(s.summary)}`);
    for (const o of s.options) {
      const long = o.flags.find((f) => f.startsWith('--'));
      const short = o.flags.find((f) => !f.startsWith('--'));
      const parts = [`complete -c notarize -n ${quote(`__fish_seen_subcommand_from ${s.name}`)}`];
      if (long) parts.push(`-l ${long.slice(2)}`);
      if (short) parts.push(`-s ${short.slice(1)}`);
      parts.push(`-d ${quote(o.description)}`);
      lines.push(parts.join(' '));
    }
    for (const sub of s.subcommands)
      lines.push(`complete -c notarize -n ${quote(`__fish_seen_subcommand_from ${s.name}`)} -a ${sub}`);
    if (['register', 'hash', 'verify', 'show'].includes(s.name)) {
      lines.push(`complete -c notarize -n ${quote(`__fish_seen_subcommand_from ${s.name}`)} -F`);
    }
  }
  for (const flag of GLOBAL_FLAGS) lines.push(`complete -c notarize -l ${flag.slice(2)}`);
  return `${lines.join('\n')}\n`;
}

const GENERATORS: Record<string, (specs: CommandSpec[]) => string> = { bash, zsh, fish };

export function configure(command: Command, context: () => Context): void {
  command
    .argument('<shell>', 'bash, zsh or fish')
    .addHelpText(
      'after',
      examples([
        'eval "$(notarize completion bash)"            # in ~/.bashrc',
        'notarize completion zsh > "${fpath[1]}/_notarize"',
        'notarize completion fish > ~/.config/fish/completions/notarize.fish',
        '# CI images: install completions system-wide at build time',
        'notarize completion bash > /etc/bash_completion.d/notarize',
      ]),
    )
    .action(async (shell: string) => {
      const generate = GENERATORS[shell];
      if (!generate) throw new UsageError(`unknown shell '${shell}'`, { hint: 'use bash, zsh or fish' });
      context().io.data(generate(await commandSpecs()));
    });
}
