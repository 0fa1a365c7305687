// SPDX-License-Identifier: Apache-2.0
// The host page's Inference tab: the host's serving processes (vLLM, SGLang, TensorRT-LLM,
// TGI), their latency, throughput, queue, caches and batching, and the GPUs they use, over the
// view's window. A click on a point opens that process's GPU profile of the bucket.
import { h } from './dom';
import { InferencePanel } from './inference_charts';
import { NO_SERVER_HELP } from './inference_api';
import type { Serving } from './inference_api';
import type { QueryBatcher } from './api';
import type { Marker } from './chart';
import type { ViewContext } from './view';
import type { Widget } from './widget';

export function buildInferenceTab(panel: HTMLElement, ctx: ViewContext, host: string, serving: Serving[], widgets: Widget[], loaders: ((c: ViewContext, markers: Marker[], q: QueryBatcher) => Promise<void>)[]): void {
  if (serving.length === 0) {
    panel.append(
      h(
        'section.card',
        { 'data-testid': 'inference-empty' },
        h('p', {}, `No inference server found on ${host} in this window.`),
        h('p.muted', {}, NO_SERVER_HELP),
        h('p', {}, h('a', { href: ctx.href({ view: 'inference' }) }, 'Models served across the fleet')),
      ),
    );
    return;
  }
  const view = new InferencePanel({
    matchers: { host },
    serving,
    acrossHosts: false,
    open: (c, p, start, end) => c.openProfile({ start, end, kind: 'gpu', pid: p?.pid }),
  });
  panel.append(view.el);
  widgets.push(...view.allWidgets());
  loaders.push((c, markers, q) => view.load(c, q, markers));
}
