// SPDX-License-Identifier: Apache-2.0
// Frame kinds in the flamegraph: one colour per kind in each theme (chosen so the dark frame
// text stays readable on both), their names for tooltips, and the legend. Colour is never the
// only cue: the tooltip names the kind.
import type { FlameNode, FrameKind } from './api';
import { h } from './dom';

interface KindStyle {
  label: string;
  hue: number;
  sat: number;
  light: number; // light theme; the dark theme is 8 points darker
}

export const KIND_STYLES: Record<FrameKind, KindStyle> = {
  python: { label: 'Python', hue: 205, sat: 70, light: 72 },
  native: { label: 'native', hue: 28, sat: 85, light: 65 },
  os_kernel: { label: 'OS kernel', hue: 350, sat: 65, light: 72 },
  launch: { label: 'CUDA launch', hue: 265, sat: 55, light: 78 },
  kernel: { label: 'CUDA kernel', hue: 130, sat: 45, light: 62 },
  sass: { label: 'SASS', hue: 170, sat: 50, light: 60 },
  stall: { label: 'stall reason', hue: 52, sat: 85, light: 62 },
  memory: { label: 'memory copy', hue: 190, sat: 65, light: 70 },
  marker: { label: 'marker', hue: 0, sat: 0, light: 76 },
  process: { label: 'process', hue: 210, sat: 15, light: 78 },
  unknown: { label: 'other', hue: 35, sat: 25, light: 72 },
};

const ORDER: FrameKind[] = ['process', 'python', 'native', 'os_kernel', 'launch', 'kernel', 'sass', 'stall', 'memory', 'marker', 'unknown'];

export function kindOf(node: { kind?: string }): FrameKind {
  return node.kind && node.kind in KIND_STYLES ? (node.kind as FrameKind) : 'unknown';
}

export function kindLabel(kind: FrameKind): string {
  return KIND_STYLES[kind].label;
}

// The fill of a frame of `kind`; `jitter` (0..1, from the name) varies the lightness a little so
// that neighbours of one kind stay apart.
export function kindColor(kind: FrameKind, dark: boolean, jitter = 0.5): string {
  const s = KIND_STYLES[kind];
  const light = s.light - (dark ? 8 : 0) + Math.round((jitter - 0.5) * 6);
  return `hsl(${s.hue} ${s.sat}% ${light}%)`;
}

// The kinds present in a tree, in legend order.
export function kindsIn(root: FlameNode): FrameKind[] {
  const seen = new Set<FrameKind>();
  const walk = (n: FlameNode) => {
    seen.add(kindOf(n));
    for (const c of n.children ?? []) walk(c);
  };
  for (const c of root.children ?? []) walk(c);
  return ORDER.filter((k) => seen.has(k));
}

// The legend of the kinds in `root`; swatches follow the theme.
export function kindLegend(root: FlameNode): HTMLElement {
  const dark = document.documentElement.dataset.theme === 'dark';
  return h(
    'ul.flame-legend',
    { 'aria-label': 'Frame kinds', 'data-testid': 'flame-legend' },
    ...kindsIn(root).map((k) =>
      h('li', { 'data-kind': k }, h('span.swatch', { style: `background:${kindColor(k, dark)}`, 'aria-hidden': 'true' }), kindLabel(k)),
    ),
  );
}
