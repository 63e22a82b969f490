// Lint: typescript-eslint with type information, plus the limits we keep on size and
// complexity (small pieces, no any, no floating promises).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import local from './eslint-rules/no-import-cycle.mjs';

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', 'coverage/**', '**/*.js', '**/*.cjs', '**/*.mjs'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      complexity: ['error', 12],
      'max-depth': ['error', 3],
      'max-params': ['error', 4],
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // No file's imports lead back to it (eslint-rules/no-import-cycle.mjs).
    plugins: { local },
    rules: { 'local/no-import-cycle': 'error' },
  },
  {
    // One concept per file: a source file past this has two in it.
    files: ['*/src/**/*.ts', '*/bench/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 400 }] },
  },
  {
    files: ['**/test/**/*.ts', '*/bench/**/*.ts'],
    rules: {
      'max-lines-per-function': 'off',
      complexity: 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      // Jest's toMatchObject takes a bare RegExp for an object with no keys: it matches any
      // value, so such an assertion can never fail.
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "CallExpression[callee.property.name=/^(toMatchObject|objectContaining|toHaveBeenCalledWith|toContainEqual)$/] Literal[regex]:not(CallExpression[callee.property.name='stringMatching'] Literal)",
          message:
            'A bare regular expression here matches anything: wrap it in expect.stringMatching().',
        },
      ],
    },
  },
);
