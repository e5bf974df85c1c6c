/**
 * Running action.yml as the GitHub runner does, for the tests: its main file
 * spawned by Node with the inputs as INPUT_<NAME> variables (defaults from
 * action.yml for what the step does not give), GITHUB_ACTIONS=true, and
 * GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files; then the outputs read back.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT, runProcess, type Run } from '../helpers/cli.js';
import { LOCAL_URL } from '../helpers/env.js';

interface ActionMetadata {
  inputs: Record<string, { required?: boolean; default?: string }>;
  outputs: Record<string, { description: string }>;
  runs: { using: string; main: string };
}

export const ACTION = parse(readFileSync(join(REPO_ROOT, 'action.yml'), 'utf8')) as ActionMetadata;

/** What one step of the action left: notarize's run, its outputs, the summary it appended. */
export interface StepRun {
  run: Run;
  outputs: Record<string, string>;
  summary: string;
  /** The step's RUNNER_TEMP. */
  runnerTemp: string;
}

/** Parses $GITHUB_OUTPUT (name=value lines and name<<DELIMITER blocks). */
export function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([^=<]+)<<(.+)$/.exec(lines[i]!);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2]!, i + 1);
      outputs[heredoc[1]!] = lines.slice(i + 1, end).join('\n');
      i = end;
    } else if (lines[i]!.includes('=')) {
      const at = lines[i]!.indexOf('=');
      outputs[lines[i]!.slice(0, at)] = lines[i]!.slice(at + 1);
    }
  }
  return outputs;
}

/**
 * Runs the action once in `workspace` with `inputs` (by their action.yml
 * names) and `env`, which must name the step's own store, or a HOME of the
 * test's own (the action then keeps its store under RUNNER_TEMP); the service is
 * one this test started on 127.0.0.1 (the default one is never reached).
 */
export async function runActionStep(
  workspace: string,
  inputs: Record<string, string>,
  env: Record<string, string> & ({ NOTARIZE_CONFIG_DIR: string } | { HOME: string }),
): Promise<StepRun> {
  if (!LOCAL_URL.test(inputs['base-url'] ?? '')) throw new Error('the action runs against a local sandbox only');
  const files = mkdtempSync(join(workspace, '..', 'runner-'));
  const outputFile = join(files, 'output');
  const summaryFile = join(files, 'summary');
  writeFileSync(outputFile, '');
  writeFileSync(summaryFile, '');
  const inputEnv: Record<string, string> = {};
  for (const [name, spec] of Object.entries(ACTION.inputs)) {
    inputEnv[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = inputs[name] ?? spec.default ?? '';
  }
  const run = await runProcess(
    process.execPath,
    [join(REPO_ROOT, ACTION.runs.main)],
    {
      ...inputEnv,
      GITHUB_ACTIONS: 'true',
      GITHUB_OUTPUT: outputFile,
      GITHUB_STEP_SUMMARY: summaryFile,
      GITHUB_WORKSPACE: workspace,
      RUNNER_TEMP: files,
      CI: 'true',
      ...env,
    },
    { cwd: workspace, noBaseUrlCheck: true },
  );
  return {
    run,
    outputs: parseOutputs(readFileSync(outputFile, 'utf8')),
    summary: readFileSync(summaryFile, 'utf8'),
    runnerTemp: files,
  };
}
