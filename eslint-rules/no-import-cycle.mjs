// A lint rule of our own: no import cycle between the source files of a workspace. A file whose
// imports lead back to it (through `import`, `import type` or `export ... from`, relative paths
// only; workspaces import each other by package name, and the TypeScript project references
// already refuse a cycle between them) is reported at the import that starts the cycle, with the
// whole path. The graph of the other files is read from disk, once per file per lint run.

import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const SPECIFIER =
  /(?:^|[\s;}])(?:import|export)\s(?:[^;'"]*?\sfrom\s*)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The source without comments, so that an import in a comment is no edge. */
const withoutComments = (text) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');

function isFile(file) {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The .ts file a relative specifier names (`./x`, `./x.js`, `./dir` for its index.ts). */
function resolve(from, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = [
    base.replace(/\.js$/, '.ts'),
    `${base}.ts`,
    path.join(base, 'index.ts'),
    base,
  ];
  return candidates.find((c) => c.endsWith('.ts') && isFile(c));
}

const edges = new Map();

/** The files `file` imports, read from disk (cached for the run). */
function importsOf(file) {
  let found = edges.get(file);
  if (found) return found;
  found = [];
  let text = '';
  try {
    text = withoutComments(readFileSync(file, 'utf8'));
  } catch {
    text = '';
  }
  for (const m of text.matchAll(SPECIFIER)) {
    const target = resolve(file, m[1] ?? m[2]);
    if (target && !found.includes(target)) found.push(target);
  }
  edges.set(file, found);
  return found;
}

/** The shortest path from `start` back to `file`, or undefined. */
function pathBack(start, file) {
  const parent = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const at = queue.shift();
    if (at === file) {
      const trail = [];
      for (let f = at; f !== undefined; f = parent.get(f)) trail.unshift(f);
      return trail;
    }
    for (const next of importsOf(at))
      if (!parent.has(next)) {
        parent.set(next, at);
        queue.push(next);
      }
  }
  return undefined;
}

export const noImportCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'disallow import cycles between the source files of a workspace' },
    schema: [],
    messages: { cycle: 'import cycle: {{cycle}}' },
  },
  create(context) {
    const file = context.filename;
    const check = (node) => {
      const specifier = node.source?.value;
      if (typeof specifier !== 'string') return;
      const target = resolve(file, specifier);
      if (!target) return;
      const trail = pathBack(target, file);
      if (!trail) return;
      const root = path.dirname(file);
      const cycle = [file, ...trail].map((f) => path.relative(root, f) || path.basename(f));
      context.report({ node, messageId: 'cycle', data: { cycle: cycle.join(' -> ') } });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};

export default { rules: { 'no-import-cycle': noImportCycle } };
