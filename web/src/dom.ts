// SPDX-License-Identifier: Apache-2.0
// A tiny DOM builder: h('a.link', {href: '/x'}, 'text', child).

type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;
type Child = Node | string | number | null | undefined | false | Child[];

export function h<K extends keyof HTMLElementTagNameMap>(
  tagAndClasses: K | `${K}.${string}`,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const [tag, ...classes] = tagAndClasses.split('.');
  const el = document.createElement(tag) as HTMLElementTagNameMap[K];
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
    } else if (k === 'class') {
      el.className = [el.className, String(v)].filter(Boolean).join(' ');
    } else if (v === true) {
      el.setAttribute(k, '');
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el: HTMLElement, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// An SVG sparkline of points (gaps break the line). Its scale holds the data, zero (a flat 97 %
// does not swing across the whole height) and `include` (e.g. {max: 1}: a ratio's 100 %).
export function sparkline(points: [number, number | null][], width = 120, height = 28, include: { min?: number; max?: number } = {}): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.setAttribute('class', 'spark');
  svg.setAttribute('aria-hidden', 'true');
  const vals = points.filter((p) => p[1] !== null) as [number, number][];
  if (vals.length < 2) return svg;
  const t0 = points[0][0];
  const t1 = points[points.length - 1][0];
  let lo = Math.min(0, include.min ?? 0, ...vals.map((p) => p[1]));
  let hi = Math.max(0, include.max ?? 0, ...vals.map((p) => p[1]));
  if (hi - lo < 1e-9) {
    lo -= 1;
    hi += 1;
  }
  let d = '';
  let pen = false;
  for (const [t, v] of points) {
    if (v === null) {
      pen = false;
      continue;
    }
    const x = ((t - t0) / (t1 - t0 || 1)) * (width - 2) + 1;
    const y = height - 2 - ((v - lo) / (hi - lo)) * (height - 4);
    d += `${pen ? 'L' : 'M'}${x.toFixed(1)},${y.toFixed(1)}`;
    pen = true;
  }
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', d);
  svg.append(path);
  return svg;
}

export function clear(el: HTMLElement): void {
  el.textContent = '';
}
