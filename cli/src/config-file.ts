// Loads an injector configuration file for the CLI, or the documented default.

import {
  DEFAULT_CONFIG_YAML,
  makeSnapshot,
  mustParseConfig,
  type ConfigSnapshot,
} from '@outrigger/shared';
import type { Io } from './io';

export async function loadSnapshot(io: Io, path: string | undefined): Promise<ConfigSnapshot> {
  const text = path === undefined ? DEFAULT_CONFIG_YAML : await io.readFile(path);
  const config = mustParseConfig(text, path ?? 'default configuration');
  return makeSnapshot(config);
}
