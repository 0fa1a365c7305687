// SPDX-License-Identifier: Apache-2.0
// The profile panel's top-functions table: self and total per function with their share of the
// profile and, for CPU time, of all the host's cores over the window, its source (file:line where
// the profile has it); each name highlights the function in the flamegraph.
import type { FlameNode } from './api';
import type { CoreShare } from './flame';
import { topFunctions } from './flame';
import { kindLabel } from './flame_kinds';
import { formatPercent, formatSample } from './format';
import { h } from './dom';

export function functionsTable(
  root: FlameNode,
  valueIndex: number,
  unit: string,
  coreShare: CoreShare | null,
  onPick: (name: string) => void,
): HTMLElement {
  const all = root.total[valueIndex] || 1;
  // Functions with none of this value (GPU frames in a table by CPU time) are left out.
  const rows = topFunctions(root, valueIndex)
    .filter((r) => r.total > 0)
    .slice(0, 25);
  // CPU nanoseconds per function, for the share of all cores (whatever the table is sorted by).
  const cpu = coreShare ? new Map(topFunctions(root, coreShare.value).map((r) => [r.name, r])) : null;
  const capacity = coreShare?.capacityNs ?? null;
  const coreCell = (ns: number | undefined) =>
    h('td.num', { title: capacity ? '' : `unknown: ${coreShare?.unknownReason ?? ''}` }, capacity ? formatPercent((ns ?? 0) / capacity) : '–');
  const coreHeads = coreShare
    ? [
        h('th.num', { scope: 'col', title: `CPU time over ${coreShare.cores ?? '?'} cores × the window` }, 'Self, all cores'),
        h('th.num', { scope: 'col', title: `CPU time over ${coreShare.cores ?? '?'} cores × the window` }, 'Total, all cores'),
      ]
    : [];
  return h(
    'table.data',
    { 'data-testid': 'top-functions' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'Function'),
        h('th', { scope: 'col' }, 'Kind'),
        h('th.num', { scope: 'col' }, 'Self'),
        h('th.num', { scope: 'col' }, 'Self %'),
        h('th.num', { scope: 'col' }, 'Total'),
        h('th.num', { scope: 'col' }, 'Total %'),
        ...coreHeads,
      ),
    ),
    h(
      'tbody',
      {},
      ...rows.map((r) =>
        h(
          'tr',
          {},
          h(
            'td',
            {},
            h('button.linklike', { type: 'button', title: 'Highlight in the flamegraph', onclick: () => onPick(r.name) }, r.name),
            r.source ? h('div.fn-source.muted', { 'data-testid': 'fn-source' }, r.source) : null,
          ),
          h('td', {}, kindLabel(r.kind)),
          h('td.num', {}, formatSample(r.self, unit)),
          h('td.num', {}, formatPercent(r.self / all)),
          h('td.num', {}, formatSample(r.total, unit)),
          h('td.num', {}, formatPercent(r.total / all)),
          ...(cpu ? [coreCell(cpu.get(r.name)?.self), coreCell(cpu.get(r.name)?.total)] : []),
        ),
      ),
    ),
  );
}
