// The `sets:` section the benchmarks inject with: `total` sets counting the proxy (the default
// set), of which `matching` select every pod; the others ask for a pod label no pod has. Each set
// adds one native sidecar with a port and resources, and one volume, like a small log shipper.

export function sidecarSetsYaml(total: number, matching: number): string {
  if (matching < 1 || matching > total) throw new Error('matching must be from 1 to total');
  const sets = Array.from({ length: total - 1 }, (_, i) => {
    const selects = i < matching - 1;
    return [
      `  - name: set-${i}`,
      ...(selects ? [] : [`    podSelector: {matchLabels: {bench-set-${i}: "on"}}`]),
      '    containers:',
      `      - {name: sidecar-${i}, image: "ghcr.io/acme/sidecar-${i}:1.${i}", ports: [{containerPort: ${20000 + i}}], resources: {requests: {cpu: 10m, memory: 16Mi}}}`,
      `    volumes: [{name: scratch-${i}, emptyDir: {}}]`,
    ].join('\n');
  });
  return sets.length === 0 ? '' : `sets:\n${sets.join('\n')}\n`;
}
