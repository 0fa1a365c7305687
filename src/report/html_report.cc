// SPDX-License-Identifier: Apache-2.0
#include "report/html_report.h"

#include <fmt/format.h>
#include <time.h>

#include <nlohmann/json.hpp>

#include "profiling/frame_kind.h"
#include "report/frame_classify.h"
#include "report/html_assets.h"

namespace warpscope::report {
namespace {

using profiling::FrameKind;

constexpr FrameKind kKinds[] = {FrameKind::kUnknown, FrameKind::kProcess, FrameKind::kPython,
                                FrameKind::kNative,  FrameKind::kLaunch,  FrameKind::kKernel,
                                FrameKind::kSass,    FrameKind::kStall,   FrameKind::kMemory,
                                FrameKind::kMarker,  FrameKind::kOsKernel};

size_t KindIndex(FrameKind k) {
  for (size_t i = 0; i < std::size(kKinds); ++i) {
    if (kKinds[i] == k) return i;
  }
  return 0;
}

nlohmann::json NodeJson(const FlameNode& n) {
  nlohmann::json children = nlohmann::json::array();
  for (const FlameNode& c : n.children) children.push_back(NodeJson(c));
  return nlohmann::json::array({n.name, KindIndex(n.kind), n.cpu_ns, n.gpu_ns, n.pc_samples,
                                n.self_cpu_ns, n.self_gpu_ns, n.self_pc_samples,
                                std::move(children)});
}

std::string Pct(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string LocalTime(int64_t realtime_ns) {
  const time_t t = static_cast<time_t>(realtime_ns / 1'000'000'000);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S %z", &tm);
  return buf;
}

std::string Command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain =
        !a.empty() && a.find_first_of(" \t\n'\"\\$`;&|<>*?()[]{}") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

void Part(std::string& out, std::string_view title, const PartStatus& p) {
  if (p.present) {
    out += fmt::format("<div class=\"present\"><b>{}: collected.</b>", title);
  } else {
    out += fmt::format("<div class=\"absent\"><b>{}: absent.</b> {}", title, HtmlEscape(p.reason));
    if (!p.remedy.empty()) out += "<br>Remedy: " + HtmlEscape(p.remedy);
  }
  for (const std::string& n : p.notes) out += "<br>" + HtmlEscape(n);
  out += "</div>\n";
}

void Summary(std::string& out, const ProfileReport& r) {
  const int64_t wall = std::max<int64_t>(0, r.run.end_ns - r.run.start_ns);
  const int64_t gpu = r.kernel_ns + r.memory_ns;
  const int64_t most = std::max<int64_t>({r.cpu_ns, gpu, 1});
  auto bar = [&](int64_t v, std::string_view color) {
    return fmt::format(
        "<span class=\"bar\" style=\"width:{}px;background:{}\"></span>",
        static_cast<int64_t>(300.0 * static_cast<double>(v) / static_cast<double>(most)), color);
  };
  out += "<h2 id=\"summary\">GPU time vs CPU time</h2>\n<table>\n";
  out += fmt::format("<tr><td>wall time profiled</td><td class=\"n\">{}</td><td></td></tr>\n",
                     FormatNs(wall));
  out += fmt::format(
      "<tr><td>CPU time (all processes, all threads)</td><td class=\"n\">{}</td><td>{} "
      "{:.2f} cores on average, {} samples</td></tr>\n",
      FormatNs(r.cpu_ns), bar(r.cpu_ns, "#e5a54b"),
      wall > 0 ? static_cast<double>(r.cpu_ns) / static_cast<double>(wall) : 0.0, r.cpu_samples);
  out += fmt::format(
      "<tr><td>GPU time (kernels and memory operations)</td><td class=\"n\">{}</td><td>{} "
      "{} of the wall time, summed over GPUs and streams</td></tr>\n",
      FormatNs(gpu), bar(gpu, "#3b7dd8"), Pct(gpu, wall));
  out += fmt::format(
      "<tr><td>&nbsp;&nbsp;kernels</td><td class=\"n\">{}</td><td>{} launches</td></tr>\n",
      FormatNs(r.kernel_ns), r.launches);
  out += fmt::format(
      "<tr><td>&nbsp;&nbsp;memory copies and sets</td><td class=\"n\">{}</td>"
      "<td></td></tr>\n</table>\n",
      FormatNs(r.memory_ns));
  if (r.cpu_ns > 0 && gpu > 0) {
    out += fmt::format(
        "<p>The GPUs were busy {} of the time the CPUs spent for this command "
        "(GPU time / CPU time).</p>\n",
        Pct(gpu, r.cpu_ns));
  }
}

void Kernels(std::string& out, const ProfileReport& r) {
  out += "<h2 id=\"kernels\">Top kernels</h2>\n";
  if (r.kernels.empty()) {
    out += "<p>No kernel was recorded.</p>\n";
    return;
  }
  out +=
      "<table><tr><th>kernel</th><th class=\"n\">GPU time</th><th class=\"n\">share</th>"
      "<th class=\"n\">launches</th><th>launch sites (Python / native caller, GPU time)</th>"
      "</tr>\n";
  for (const KernelRow& k : r.kernels) {
    out += fmt::format(
        "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}"
        "</td><td class=\"n\">{}</td><td><ul class=\"sites\">",
        HtmlEscape(k.name), FormatNs(k.gpu_ns), Pct(k.gpu_ns, r.kernel_ns), k.launches);
    for (const LaunchSite& s : k.sites) {
      out += fmt::format("<li>{} / {} &mdash; {}</li>",
                         s.python.empty() ? "(no Python frame)" : HtmlEscape(s.python),
                         s.native.empty() ? "(no native frame)" : HtmlEscape(s.native),
                         FormatNs(s.gpu_ns));
    }
    out += "</ul></td></tr>\n";
  }
  out += "</table>\n";
}

void Functions(std::string& out, const ProfileReport& r) {
  out += "<h2 id=\"functions\">Top CPU functions</h2>\n";
  if (r.functions.empty()) {
    out += "<p>No CPU sample was recorded.</p>\n";
    return;
  }
  out +=
      "<table><tr><th>function</th><th>kind</th><th>where</th><th class=\"n\">self</th>"
      "<th class=\"n\">self %</th><th class=\"n\">total</th><th class=\"n\">total %</th></tr>\n";
  for (const FunctionRow& f : r.functions) {
    out += fmt::format(
        "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
        HtmlEscape(f.name), profiling::FrameKindName(f.kind), HtmlEscape(f.where),
        FormatNs(f.self_ns), Pct(f.self_ns, r.cpu_ns), FormatNs(f.total_ns),
        Pct(f.total_ns, r.cpu_ns));
  }
  out += "</table>\n";
}

void Breakdowns(std::string& out, const ProfileReport& r) {
  out +=
      "<h2 id=\"processes\">Processes</h2>\n<table><tr><th class=\"n\">pid</th>"
      "<th>executable</th><th class=\"n\">CPU time</th><th class=\"n\">CPU samples</th>"
      "<th class=\"n\">GPU time</th><th class=\"n\">launches</th></tr>\n";
  for (const ProcessRow& p : r.processes) {
    out += fmt::format(
        "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td class=\"n\">{}"
        "</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}"
        "</td></tr>\n",
        p.pid, HtmlEscape(p.executable), FormatNs(p.cpu_ns), p.cpu_samples, FormatNs(p.gpu_ns),
        p.launches);
  }
  out += "</table>\n<h2 id=\"gpus\">GPUs</h2>\n";
  if (r.gpus.empty()) {
    out += "<p>No GPU activity was recorded.</p>\n";
    return;
  }
  out +=
      "<table><tr><th>GPU</th><th class=\"n\">kernel time</th><th class=\"n\">memory time"
      "</th><th class=\"n\">launches</th></tr>\n";
  for (const GpuRow& g : r.gpus) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td></tr>\n",
        g.device < 0 ? std::string("(not reported)") : fmt::format("GPU {}", g.device),
        FormatNs(g.kernel_ns), FormatNs(g.memory_ns), g.launches);
  }
  out += "</table>\n";
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatNs(int64_t ns) {
  const double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000 || ns <= -1'000'000'000) return fmt::format("{:.2f} s", v / 1e9);
  if (ns >= 1'000'000 || ns <= -1'000'000) return fmt::format("{:.1f} ms", v / 1e6);
  if (ns >= 1'000 || ns <= -1'000) return fmt::format("{:.1f} \u00b5s", v / 1e3);
  return fmt::format("{} ns", ns);
}

std::string FlameJson(const FlameNode& root) {
  nlohmann::json kinds = nlohmann::json::array();
  for (FrameKind k : kKinds) kinds.push_back(profiling::FrameKindName(k));
  nlohmann::json doc = {{"kinds", kinds}, {"tree", NodeJson(root)}};
  // ASCII only, and no '<', '>' or '&' outside escapes: the text cannot end its <script>.
  std::string text =
      doc.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderHtml(const ProfileReport& r, const std::vector<std::string>& files) {
  std::string out;
  out.reserve(64 * 1024);
  const std::string command = Command(r.run.command);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += fmt::format("<title>warpscope profile: {}</title>\n", HtmlEscape(command));
  out += "<style>";
  out += kReportCss;
  out += "</style></head><body>\n";
  out += fmt::format("<h1>warpscope profile: <code>{}</code></h1>\n", HtmlEscape(command));
  out += fmt::format("<p id=\"run\">Host <b>{}</b>, from {} for {}; the command {}.</p>\n",
                     HtmlEscape(r.run.host), LocalTime(r.run.start_ns),
                     FormatNs(r.run.end_ns - r.run.start_ns), HtmlEscape(r.run.outcome));
  out +=
      "<p><a href=\"#summary\">summary</a> &middot; <a href=\"#flamegraph\">flamegraph</a> "
      "&middot; <a href=\"#kernels\">top kernels</a> &middot; <a href=\"#functions\">top CPU "
      "functions</a> &middot; <a href=\"#processes\">processes</a> &middot; <a href=\"#gpus\">"
      "GPUs</a> &middot; <a href=\"#files\">files</a></p>\n";
  out += "<h2 id=\"parts\">What was collected</h2>\n";
  Part(out, "CPU profile", r.run.cpu);
  Part(out, "GPU profile", r.run.gpu);
  Summary(out, r);

  out += "<h2 id=\"flamegraph\">Flamegraph (CPU and GPU)</h2>\n";
  out +=
      "<p>Weight: <select id=\"weight\"><option value=\"both\">CPU time + GPU time</option>"
      "<option value=\"cpu\">CPU time</option><option value=\"gpu\">GPU time</option>"
      "<option value=\"pc\">PC samples</option></select> <button id=\"reset\">reset zoom"
      "</button> &mdash; hover for details, click a frame to zoom, click a faded frame above "
      "to zoom out.</p>\n<div class=\"legend\" id=\"legend\"></div>\n";
  if (r.flame_nodes_folded > 0) {
    out += fmt::format("<p>{} small subtrees are folded into \"(other)\" frames.</p>\n",
                       r.flame_nodes_folded);
  }
  out +=
      "<div id=\"flame\"><noscript>The flamegraph needs JavaScript; the pprof files hold the "
      "same profiles.</noscript></div><div id=\"tip\"></div>\n";
  out += "<script type=\"application/json\" id=\"flame-data\">";
  out += FlameJson(r.flame);
  out += "</script>\n";

  Kernels(out, r);
  Functions(out, r);
  Breakdowns(out, r);

  out += "<h2 id=\"files\">Files</h2>\n<ul>\n";
  for (const std::string& f : files) {
    out += fmt::format("<li><a href=\"{0}\"><code>{0}</code></a></li>\n", HtmlEscape(f));
  }
  out +=
      "</ul>\n<p>The <code>.pb.gz</code> files are pprof profiles (<code>go tool pprof</code>, "
      "<code>pprof -http</code>)";
  for (const std::string& f : files) {
    if (f.ends_with(".perfetto-trace")) {
      out += fmt::format(
          "; <code>{}</code> is a Perfetto trace: open it in Perfetto's UI "
          "(<a href=\"https://ui.perfetto.dev\">ui.perfetto.dev</a>, \"Open trace file\") or "
          "query it with trace processor",
          HtmlEscape(f));
    } else if (f.ends_with(".json") && f != "summary.json") {
      out += fmt::format(
          "; <code>{}</code> is a Chrome trace: it opens in Perfetto's UI or chrome://tracing",
          HtmlEscape(f));
    }
  }
  out += ".</p>\n";
  out += "<script>";
  out += kReportScript;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace warpscope::report
