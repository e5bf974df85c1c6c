// Type-aware linting: above all no-floating-promises, since a forgotten
// await in the store or the flow could drop a registration silently.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers, checked rather than only drawn (shared style.md: argv ->
 * command -> core -> api, back as data -> output): what the files of each
 * part of src/ must never import, and why. Every import in src/ is relative,
 * so the specifier as written names the folder or file.
 */
const EDGE = {
  files: ['cli', 'context'],
  why: 'cli.ts and context.ts are the edge that wires the layers; nothing below them reaches back up',
};
const COMMANDS = { folders: ['commands'], why: 'commands sit on top: they call the layers, never the other way round' };
const OUTPUT = { folders: ['output'], why: 'the layers below return data; commands and output/ decide what is shown' };
const SANDBOX = { folders: ['sandbox'], why: 'the sandbox emulates the service; notarize itself works without it' };
const LAYERS = [
  { name: 'src/core', forbidden: [EDGE, COMMANDS, OUTPUT, SANDBOX] },
  {
    name: 'src/api',
    forbidden: [
      EDGE,
      COMMANDS,
      OUTPUT,
      SANDBOX,
      { folders: ['store'], why: 'the client speaks HTTP only; what is kept on disk is its callers’ business' },
    ],
  },
  {
    name: 'src/store',
    forbidden: [
      EDGE,
      COMMANDS,
      OUTPUT,
      SANDBOX,
      {
        folders: ['api', 'core'],
        why: 'the store checks its own files; what it shares with api/ lives in the neutral src/validation.ts',
      },
    ],
  },
  { name: 'src/output', forbidden: [EDGE, COMMANDS, SANDBOX] },
  {
    name: 'src/sandbox',
    forbidden: [
      EDGE,
      COMMANDS,
      OUTPUT,
      {
        folders: ['core', 'store'],
        why: 'the sandbox emulates the service, not the client: it shares the wire schemas and nothing else',
      },
      {
        folders: ['api'],
        except: ['schemas.js', 'pages.js'],
        why: 'of the client it is tested against, the sandbox shares only the wire: schemas and page paths',
      },
    ],
  },
  { name: 'src/commands', forbidden: [{ files: ['cli'], why: 'cli.ts loads the commands' }] },
  {
    name: 'the neutral modules of src/',
    // Leaves every layer may use: they use none.
    modules: ['errors', 'interrupt', 'mkdirs', 'read-bounded', 'settings', 'validation', 'version'],
    forbidden: [
      EDGE,
      {
        folders: ['api', 'commands', 'core', 'output', 'sandbox', 'store'],
        why: 'a module shared by the layers depends on none of them',
      },
    ],
  },
];

/**
 * One config object per layer: `no-restricted-imports` for import, import
 * type and export ... from (the core rule counts type-only imports unless
 * told otherwise), `no-restricted-syntax` for what it does not see: import()
 * and the type-level import('...').
 */
function layerRules({ name, modules, forbidden }) {
  // A folder's files are one level (or more) below src/, the neutral modules in it.
  const up = modules ? '^\\./' : '^(\\.\\./)+';
  const entries = forbidden.map(({ folders, files, except, why }) => {
    const target = folders
      ? `${up}(${folders.join('|')})/${except ? `(?!(${except.map((e) => e.replaceAll('.', '\\.')).join('|')})$)` : ''}`
      : `${up}(${files.join('|')})\\.js$`;
    const what = folders ? folders.map((f) => `src/${f}/`) : files.map((f) => `src/${f}.ts`);
    const but = except ? ` (but ${except.map((e) => e.replace(/\.js$/, '.ts')).join(', ')})` : '';
    return { regex: target, message: `${name} must not import ${what.join(', ')}${but}: ${why}.` };
  });
  // esquery reads /.../ in a selector: the slashes inside are escaped.
  const selector = (node, field, regex) => `${node}[${field}=/${regex.replaceAll('/', '\\/')}/]`;
  return {
    files: modules ? modules.map((m) => `src/${m}.ts`) : [`${name}/**/*.ts`],
    rules: {
      'no-restricted-imports': ['error', { patterns: entries }],
      'no-restricted-syntax': [
        'error',
        ...entries.flatMap(({ regex, message }) => [
          { selector: selector('ImportExpression', 'source.value', regex), message },
          { selector: selector('TSImportType', 'argument.literal.value', regex), message },
        ]),
      ],
    },
  };
}

export default tseslint.config(
  // test/fixtures/: data, and module hooks a spawned node loads as they are (plain JS, like bin/).
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'bench/', 'bin/', 'action/', 'test/fixtures/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-console': 'off',
    },
  },
  ...LAYERS.map(layerRules),
  { files: ['eslint.config.js', 'scripts/*.js'], ...tseslint.configs.disableTypeChecked },
  {
    // Scripts run by hand or by npm scripts, in Node: they report on the console.
    files: ['scripts/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
    rules: { 'no-console': 'off' },
  },
);
