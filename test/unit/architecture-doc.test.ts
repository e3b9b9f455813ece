/**
 * docs/ARCHITECTURE.md is the map of the code, so it must stay true of it:
 * every path it names exists, every folder of src/ is on it, every bare
 * module name it uses is a module, and the lint rules it lists are the ones
 * .dependency-cruiser.cjs holds, no more and no fewer.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const doc = readFileSync(join(root, 'docs', 'ARCHITECTURE.md'), 'utf8');

/** Paths into the repository the document names (globs such as `src/*.ts` stop at the `*`). */
function namedPaths(text: string): string[] {
  const found = text.matchAll(
    /(?<![\w./-])((?:src|packages|test|bench|docs|config|scripts)\/[\w./-]*[\w/-])/g,
  );
  return [...new Set([...found].map((m) => m[1]!))];
}

/** Every file name under `dir`, recursively. */
function fileNames(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);
}

describe('docs/ARCHITECTURE.md', () => {
  it('names only paths that exist', () => {
    const paths = namedPaths(doc);
    expect(paths.length).toBeGreaterThan(50);
    expect(paths.filter((p) => !existsSync(join(root, p)))).toEqual([]);
  });

  it('has every folder of src/ and every package on its map', () => {
    const folders = [
      ...readdirSync(join(root, 'src'), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => `src/${e.name}/`),
      ...readdirSync(join(root, 'packages'), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => `${e.name}/`),
    ];
    expect(folders.filter((f) => !doc.includes(f))).toEqual([]);
  });

  it('names as bare modules only modules that exist', () => {
    const modules = new Set([
      ...fileNames(join(root, 'src')),
      ...fileNames(join(root, 'packages')).filter((n) => n.endsWith('.ts')),
    ]);
    const bare = [...doc.matchAll(/`([\w-]+\.ts)`/g)].map((m) => m[1]!);
    expect(bare.length).toBeGreaterThan(0);
    expect(bare.filter((n) => !modules.has(n))).toEqual([]);
  });

  it('lists exactly the import rules of .dependency-cruiser.cjs', () => {
    const require = createRequire(import.meta.url);
    const config = require(join(root, '.dependency-cruiser.cjs')) as {
      forbidden: { name: string }[];
    };
    const section = doc.slice(doc.indexOf('## Layers and imports'), doc.indexOf('## Where'));
    const listed = [...section.matchAll(/^- `([a-z-]+)`:/gm)].map((m) => m[1]!);
    expect(listed.sort()).toEqual(config.forbidden.map((r) => r.name).sort());
  });
});
