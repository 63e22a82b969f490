// Compares two V8 heap snapshots (BENCH_HEAP_SNAPSHOTS of `make bench-controller` writes one
// after each wave): the heap's size in each, what grew by constructor (or by kind, for strings,
// arrays and code), and, with --count TEXT, how many strings of exactly that text each holds,
// which counts the objects that carry one (a Deployment's status message counts Deployments).
//
//   node e2e/dist/bench/heap-compare.js BEFORE.heapsnapshot AFTER.heapsnapshot [--count TEXT]

import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

interface Group {
  count: number;
  bytes: number;
}

interface Summary {
  bytes: number;
  groups: Map<string, Group>;
  counted: number;
}

/** A node's group: its constructor for objects and closures, its kind for everything else. */
function groupOf(type: string, name: string): string {
  if (type === 'object' || type === 'closure' || type === 'native') return `${type} ${name}`;
  if (type.endsWith('string')) return '(strings)';
  return `(${type})`;
}

/** Where each field sits in a node of the snapshot's flat `nodes` array. */
function layout(snapshot: Snapshot): { width: number; type: number; name: number; size: number } {
  const fields = snapshot.snapshot.meta.node_fields;
  const [type = -1, name = -1, size = -1] = ['type', 'name', 'self_size'].map((f) =>
    fields.indexOf(f),
  );
  if (type < 0 || name < 0 || size < 0)
    throw new Error('not a V8 heap snapshot: node_fields lacks type, name or self_size');
  return { width: fields.length, type, name, size };
}

function add(groups: Map<string, Group>, key: string, size: number): void {
  const group = groups.get(key) ?? { count: 0, bytes: 0 };
  group.count++;
  group.bytes += size;
  groups.set(key, group);
}

export function summarize(snapshot: Snapshot, countText?: string): Summary {
  const at = layout(snapshot);
  const types = snapshot.snapshot.meta.node_types[0];
  const { nodes, strings } = snapshot;
  const groups = new Map<string, Group>();
  let bytes = 0;
  let counted = 0;
  for (let i = 0; i < nodes.length; i += at.width) {
    const type = types[nodes[i + at.type] ?? 0] ?? '?';
    const name = strings[nodes[i + at.name] ?? 0] ?? '';
    const size = nodes[i + at.size] ?? 0;
    bytes += size;
    if (type === 'string' && name === countText) counted++;
    add(groups, groupOf(type, name), size);
  }
  return { bytes, groups, counted };
}

const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);

function main(argv: string[]): number {
  const at = argv.indexOf('--count');
  const countText = at >= 0 ? argv[at + 1] : undefined;
  const files = argv.filter((_, i) => at < 0 || (i !== at && i !== at + 1));
  const [beforeFile, afterFile] = files;
  if (!beforeFile || !afterFile || files.length !== 2) {
    console.error('usage: heap-compare BEFORE.heapsnapshot AFTER.heapsnapshot [--count TEXT]');
    return 2;
  }
  const read = (file: string) =>
    summarize(JSON.parse(readFileSync(file, 'utf8')) as Snapshot, countText);
  const before = read(beforeFile);
  const after = read(afterFile);
  console.log(`heap: ${mib(before.bytes)} MiB -> ${mib(after.bytes)} MiB`);
  if (countText !== undefined)
    console.log(`strings ${JSON.stringify(countText)}: ${before.counted} -> ${after.counted}`);
  const keys = new Set([...before.groups.keys(), ...after.groups.keys()]);
  const rows = [...keys].map((key) => {
    const b = before.groups.get(key) ?? { count: 0, bytes: 0 };
    const a = after.groups.get(key) ?? { count: 0, bytes: 0 };
    return { key, bytes: a.bytes - b.bytes, count: a.count - b.count, was: b.count, is: a.count };
  });
  rows.sort((x, y) => Math.abs(y.bytes) - Math.abs(x.bytes));
  console.log('growth (KiB)   objects (before -> after)   group');
  for (const r of rows.slice(0, 25))
    console.log(
      `${(r.bytes / 1024).toFixed(0).padStart(12)}   ${String(r.count).padStart(7)} (${r.was} -> ${r.is})   ${r.key}`,
    );
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
