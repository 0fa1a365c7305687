// SPDX-License-Identifier: Apache-2.0
// Bundles the UI with esbuild into one directory ready to embed:
//   index.html, assets/app-<hash>.js, assets/app-<hash>.css, favicon.svg
// Usage: node build.mjs --outdir DIR [--node-modules DIR] [--minify|--no-minify]
// --node-modules points at the npm ci tree (the build runs it in the build directory, so the
// source tree stays clean); default: web/node_modules.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
function arg(name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}
const outdir = path.resolve(arg('--outdir', path.join(here, 'dist')));
const nodeModules = path.resolve(arg('--node-modules', path.join(here, 'node_modules')));
const minify = !args.includes('--no-minify');

const require = createRequire(path.join(nodeModules, 'noop.js'));
let esbuild;
try {
  esbuild = require('esbuild');
} catch (e) {
  console.error(`cannot load esbuild from ${nodeModules}: run 'npm ci' in web/ first (${e.message})`);
  process.exit(1);
}

fs.rmSync(outdir, { recursive: true, force: true });
fs.mkdirSync(path.join(outdir, 'assets'), { recursive: true });

const result = await esbuild.build({
  entryPoints: { app: path.join(here, 'src', 'main.ts') },
  bundle: true,
  minify,
  sourcemap: false,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  outdir: path.join(outdir, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  nodePaths: [nodeModules],
  metafile: true,
  logLevel: 'warning',
  legalComments: 'none',
});

let js = '';
let css = '';
for (const out of Object.keys(result.metafile.outputs)) {
  const rel = path.relative(outdir, path.resolve(out)).split(path.sep).join('/');
  if (rel.endsWith('.js')) js = rel;
  if (rel.endsWith('.css')) css = rel;
}
if (!js) {
  console.error('esbuild produced no JavaScript bundle');
  process.exit(1);
}
const template = fs.readFileSync(path.join(here, 'src', 'index.html'), 'utf8');
const html = template
  .replace('<!--CSS-->', css ? `<link rel="stylesheet" href="/${css}">` : '')
  .replace('<!--JS-->', `<script type="module" src="/${js}"></script>`);
fs.writeFileSync(path.join(outdir, 'index.html'), html);
fs.copyFileSync(path.join(here, 'src', 'favicon.svg'), path.join(outdir, 'favicon.svg'));
console.log(`web UI built into ${outdir}: ${js}${css ? ', ' + css : ''}`);
