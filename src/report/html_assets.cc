// SPDX-License-Identifier: Apache-2.0
#include "report/html_assets.h"

namespace warpscope::report {

const std::string_view kReportCss = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:12px 20px;color:#222}
h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:12px}
.absent{background:#fff4e5;border-left:4px solid #f0a030;padding:6px 10px;margin:6px 0}
.present{background:#eef8ee;border-left:4px solid #4a4;padding:6px 10px;margin:6px 0}
.sites{margin:0;padding-left:16px;font-size:12px;color:#444}
#flame{position:relative;width:100%;overflow:hidden;font:11px monospace;user-select:none}
#flame div{position:absolute;height:17px;line-height:17px;overflow:hidden;white-space:nowrap;
  box-sizing:border-box;border:1px solid #fff;padding-left:3px;cursor:pointer;color:#111}
#flame div.anc{opacity:.55}
#tip{position:fixed;display:none;background:#222;color:#fff;padding:6px 8px;font:12px monospace;
  border-radius:4px;pointer-events:none;max-width:700px;z-index:9;white-space:pre-wrap}
.legend span{display:inline-block;margin-right:12px}.legend i{display:inline-block;width:12px;
  height:12px;margin-right:4px;vertical-align:-1px}
.bar{height:14px;display:inline-block;vertical-align:middle}
)css";

const std::string_view kReportScript = R"js(
(function () {
  'use strict';
  var colors = {process: '#b0b0b0', python: '#4e9a06', native: '#e5a54b', os_kernel: '#d9534f',
    launch: '#6f42c1', kernel: '#3b7dd8', sass: '#17a2b8', stall: '#e83e8c', memory: '#8a6d3b',
    marker: '#cccccc', unknown: '#dddddd'};
  try {
    var data = JSON.parse(document.getElementById('flame-data').textContent);
    var kinds = data.kinds;
    var root = data.tree;
    var el = document.getElementById('flame');
    var tip = document.getElementById('tip');
    var sel = document.getElementById('weight');
    var path = [root];
    var units = {cpu: 'ns', gpu: 'ns', both: 'ns', pc: 'samples'};
    var legend = document.getElementById('legend');
    kinds.forEach(function (k) {
      if (k === 'unknown') return;
      var s = document.createElement('span');
      var i = document.createElement('i');
      i.style.background = colors[k] || colors.unknown;
      s.appendChild(i);
      s.appendChild(document.createTextNode(k.replace('_', ' ')));
      legend.appendChild(s);
    });
    function weight(n) {
      var m = sel.value;
      return m === 'cpu' ? n[2] : m === 'gpu' ? n[3] : m === 'pc' ? n[4] : n[2] + n[3];
    }
    function self(n) {
      var m = sel.value;
      return m === 'cpu' ? n[5] : m === 'gpu' ? n[6] : m === 'pc' ? n[7] : n[5] + n[6];
    }
    function fmt(v) {
      if (units[sel.value] !== 'ns') return v + ' samples';
      if (v >= 1e9) return (v / 1e9).toFixed(3) + ' s';
      if (v >= 1e6) return (v / 1e6).toFixed(2) + ' ms';
      if (v >= 1e3) return (v / 1e3).toFixed(1) + ' \u00b5s';
      return v + ' ns';
    }
    function pct(a, b) { return b > 0 ? (100 * a / b).toFixed(2) + '%' : '-'; }
    function box(n, depth, x, w, ancestor) {
      var d = document.createElement('div');
      d.style.left = x + 'px';
      d.style.width = Math.max(w, 1) + 'px';
      d.style.top = (depth * 17) + 'px';
      d.style.background = colors[kinds[n[1]]] || colors.unknown;
      if (ancestor) d.className = 'anc';
      if (w > 30) d.textContent = n[0];
      d.onmousemove = function (e) {
        tip.textContent = n[0] + '\nkind: ' + kinds[n[1]].replace('_', ' ') + '\ntotal: ' +
          fmt(weight(n)) + ' (' + pct(weight(n), weight(root)) + ' of all)\nself: ' +
          fmt(self(n)) + ' (' + pct(self(n), weight(root)) + ')' +
          (sel.value === 'both' ? '\nCPU ' + fmt(n[2]) + ', GPU ' + fmt(n[3]) : '');
        tip.style.display = 'block';
        tip.style.left = Math.min(e.clientX + 12, window.innerWidth - 400) + 'px';
        tip.style.top = (e.clientY + 14) + 'px';
      };
      d.onmouseleave = function () { tip.style.display = 'none'; };
      d.onclick = function () {
        if (ancestor) { path = path.slice(0, path.indexOf(n) + 1); } else { path = path.concat(zoomPath(n)); }
        render();
      };
      el.appendChild(d);
    }
    // From the zoomed node down to n (n is drawn under it).
    var parents = new Map();
    (function index(n) { n[8].forEach(function (c) { parents.set(c, n); index(c); }); })(root);
    function zoomPath(n) {
      var chain = [];
      var z = path[path.length - 1];
      for (var c = n; c && c !== z; c = parents.get(c)) chain.unshift(c);
      return chain;
    }
    function render() {
      while (el.firstChild) el.removeChild(el.firstChild);
      var width = el.clientWidth || 1200;
      var zoom = path[path.length - 1];
      var total = weight(zoom);
      var maxDepth = path.length;
      for (var i = 0; i + 1 < path.length; ++i) box(path[i], i, 0, width, true);
      if (total <= 0) {
        el.style.height = '20px';
        el.appendChild(document.createTextNode('Nothing was measured with this weight.'));
        return;
      }
      (function draw(n, depth, x) {
        var w = width * weight(n) / total;
        if (w < 0.5) return;
        box(n, depth, x, w, false);
        maxDepth = Math.max(maxDepth, depth + 1);
        var cx = x;
        n[8].forEach(function (c) { var cw = width * weight(c) / total; draw(c, depth + 1, cx); cx += cw; });
      })(zoom, path.length - 1, 0);
      el.style.height = (maxDepth * 17 + 4) + 'px';
    }
    sel.onchange = render;
    document.getElementById('reset').onclick = function () { path = [root]; render(); };
    window.addEventListener('resize', render);
    render();
    document.body.dataset.flame = 'ok';
  } catch (e) {
    document.body.dataset.flame = 'error: ' + e;
    var f = document.getElementById('flame');
    if (f) f.textContent = 'The flamegraph could not be drawn: ' + e;
  }
})();
)js";

}  // namespace warpscope::report
