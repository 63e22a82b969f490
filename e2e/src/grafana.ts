// Grafana dashboards as the repository ships them, checked against Grafana's own schema: the
// TypeScript types Grafana generates from it (@grafana/schema), for the classic JSON model.

import * as path from 'node:path';
import ts from 'typescript';
import { repoRoot } from './paths';

/**
 * The type of a value as JSON writes it: JSON names a string enum's member by its value (the
 * schema's ThresholdsMode.Absolute is "absolute"), so each string enum becomes its values.
 */
const JSON_OF =
  'type Json<T> = T extends string ? `${T}` : T extends (infer U)[] ? Json<U>[] : T extends object ? { [K in keyof T]: Json<T[K]> } : T;';

/**
 * What the TypeScript compiler finds wrong with a dashboard's JSON as a literal that must satisfy
 * Grafana's Dashboard type: a missing field, a field the model does not have, a value of the
 * wrong type. Empty when the dashboard fits the model.
 */
export function dashboardProblems(json: string): string[] {
  const file = path.join(repoRoot, 'manifests', 'grafana', 'dashboard-check.ts');
  const source = [
    "import type { Dashboard } from '@grafana/schema/dist/esm/raw/dashboard/x/Dashboard_types.gen';",
    JSON_OF,
    `export const dashboard = ${json.trim()} satisfies Json<Dashboard>;`,
  ].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.readFile = (name) => (name === file ? source : readFile(name));
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}
