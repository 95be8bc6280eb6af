/* tooltrial's HTML report viewer. Reads the JSON the page carries (summary-data, runs-data) and builds
   the page with DOM calls: every string from a run reaches the page through textContent, never as markup.
   The summary and the plots render first, while the browser still reads the runs' JSON (the page's last
   element); the run list is drawn a page at a time and a run's transcript only when it is opened. */
(function () {
  "use strict";
  var PAGE = 100;            // run rows drawn at a time
  var FOLD_CHARS = 800;      // a tool result longer than this (or FOLD_LINES lines) is folded
  var FOLD_LINES = 12;
  var COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var summary = JSON.parse(document.getElementById("summary-data").textContent);
  var runs = [];
  var app = document.getElementById("app");
  var state = {filters: {status: "", group: "", arm: "", failure: ""}, shown: 0, list: []};

  /* el("div", {class: "x"}, "text", child...): strings and numbers become text nodes. */
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) return;
        if (k === "text") node.textContent = String(attrs[k]);
        else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
        else node.setAttribute(k, String(attrs[k]));
      });
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  /* append(node, child...): each child a node, a string or number (as text), an array of them, or null. */
  function append(node) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
      else if (typeof child === "object") node.appendChild(child);
      else node.appendChild(document.createTextNode(String(child)));
    }
  }
  function many(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }
  function pct(x) { return x === null || x === undefined ? "n/a" : (100 * x).toFixed(1) + "%"; }
  function num(x, digits) {
    if (x === null || x === undefined) return "n/a";
    return typeof x === "number" && digits !== undefined ? x.toFixed(digits) : String(x);
  }
  function usd(x) { return x === null || x === undefined ? "n/a" : "$" + x.toFixed(4); }
  function secs(x) { return x === null || x === undefined ? "n/a" : x.toFixed(2) + " s"; }
  function interval(f) { return pct(f.interval[0]) + " to " + pct(f.interval[1]); }
  function group(run) { return run.case.split("/")[0]; }
  function armOf(run) {  // the arm label as report.json names it: provider, prompt, -T's name, then its --faults arm
    return run.provider + " \u00b7 " + run.prompt + (run.tool_defs ? " \u00b7 " + run.tool_defs : "") +
      (run.faults && run.faults.arm ? " \u00b7 faults " + run.faults.arm : "");
  }
  function toolDefs(run) {  // the -T file's name and fingerprint, from the arm's provenance
    var arm = (summary.arms || []).filter(function (a) { return a.arm === armOf(run); })[0];
    var print = arm && arm.provenance && arm.provenance.tool_defs;
    return run.tool_defs + (print ? " (sha256 " + print.slice(0, 12) + ")" : "");
  }
  function json(value) { return JSON.stringify(value, null, 2); }
  function table(head, rows, cls) {
    return el("div", {class: "scroll"}, el("table", {class: cls || ""},
      el("thead", null, el("tr", null, head.map(function (h) { return el("th", null, h); }))),
      el("tbody", null, rows.map(function (r) { return el("tr", null, r.map(function (c) { return el("td", null, c); })); }))));
  }
  function section(id, title) { return el("section", {id: id}, el("h2", null, title)); }
  function badge(status) { return el("span", {class: "badge " + status}, status); }

  function header() {
    var s = summary;
    var meta = ["run " + (s.run_id || "?"), "started " + (s.started || "?"), "finished " + (s.finished || "?"),
                "tooltrial " + s.tooltrial, "exit code " + s.exit_code];
    var links = [["summary", "Summary"], ["plots", "Plots"]];
    if (s.robustness) links.push(["robustness", "Robustness"]);
    if (s.comparisons.length) links.push(["comparison", "Comparison"]);
    if (s.judges) links.push(["judges", "Judges"]);
    if (s.regression) links.push(["regression", "Regression"]);
    links.push(["runs", "Runs"]);
    return el("header", null, el("h1", null, "tooltrial report"), el("p", {class: "meta"}, meta.join(" \u00b7 ")),
      el("nav", null, links.map(function (l) { return el("a", {href: "#" + l[0]}, l[1]); })));
  }

  function figuresRow(name, f) {
    return [name, f.runs, f.passed, f.failed, f.errored + (f.infra_errors ? " (" + f.infra_errors + " infra)" : ""),
            pct(f.pass_rate), interval(f), num(f.outcome_mean, 2), num(f.process_mean, 2), num(f.calls_mean, 1),
            num(f.tokens_total), num(f.tokens_per_pass, 0), usd(f.cost_total), usd(f.cost_per_pass), secs(f.duration_mean)];
  }
  var FIGURE_HEAD = ["", "runs", "passed", "failed", "errored", "pass rate", "95% interval", "outcome", "process",
                     "calls / run", "tokens", "tokens / pass", "cost", "cost / pass", "duration / run"];

  /* Counts over every run: redundant tool calls, cut-off final replies, cached prompt tokens, and the
     response cache's hits and misses when some run used it. */
  function countsLine(s) {
    var o = s.overall;
    var parts = ["redundant tool calls: " + o.redundant_total,
                 "final replies truncated at the output limit: " + o.truncated_replies + " of " + many(o.runs, "run"),
                 "cached prompt tokens: " + num(o.cached_tokens_total)];
    if (s.cache) parts.push("response cache: " + many(s.cache.hits, "hit") + ", " + s.cache.misses + (s.cache.misses === 1 ? " miss" : " misses"));
    return parts.join("; ");
  }
  function summarySection() {
    var s = summary, o = s.overall, node = section("summary", "Summary");
    append(node, el("p", {class: "overall"}, o.runs + " runs: " + o.passed + " passed, " + o.failed + " failed, " +
      o.errored + " errored; pass rate " + pct(o.pass_rate) + " (95% Wilson interval " + interval(o) + ")"));
    append(node, el("p", {class: "counts"}, countsLine(s)));
    if (s.unfinished) append(node, el("p", {class: "warn"}, s.unfinished.length + " runs left unfinished by an interruption"));
    append(node, el("h3", null, "Per arm"));
    append(node, table(FIGURE_HEAD.map(function (h, i) { return i ? h : "arm"; }),
      s.arms.map(function (a) { return figuresRow(a.arm, a); }).concat([figuresRow("all arms", o)]), "figures arms"));
    append(node, el("h3", null, "Per group"));
    var rows = [];
    s.arms.forEach(function (a) {
      Object.keys(a.groups).forEach(function (g) { rows.push(figuresRow(g + " [" + a.arm + "]", a.groups[g])); });
    });
    append(node, table(FIGURE_HEAD.map(function (h, i) { return i ? h : "group [arm]"; }), rows, "figures groups"));
    var attacked = s.arms.filter(function (a) { return a.injection; });
    if (attacked.length) {  // prompt injections (docs/robustness.md)
      append(node, el("h3", null, "Prompt injections"));
      var measures = [["utility_clean", "utility, no attack"], ["utility_attacked", "utility under attack"], ["attack_success", "attack success"]];
      append(node, table(["arm", "measure", "runs", "rate", "95% interval"], [].concat.apply([], attacked.map(function (a) {
        return measures.map(function (m) {
          var x = a.injection[m[0]];
          return [a.arm, m[1], x.count + "/" + x.runs, pct(x.rate), x.rate === null ? "n/a" : interval(x)];
        });
      })), "figures injections"));
    }
    var cells = el("details", {id: "cells"}, el("summary", null, "Per case (" + s.cells.length + " cases \u00d7 arms)"));
    cells.addEventListener("toggle", function () {  // drawn when first opened: a suite may have thousands
      if (!cells.open || cells.querySelector("table")) return;
      append(cells, table(["case", "arm", "runs", "passed", "pass rate", "95% interval", "pass@k", "pass^k", "flaky", "gate"],
        s.cells.map(function (c) {
          var k = Object.keys(c.pass_at_k).length;
          return [c.case, c.arm, c.runs, c.passed, pct(c.pass_rate), interval(c), k ? num(c.pass_at_k[k], 2) + " (k=" + k + ")" : "n/a",
                  k ? num(c.pass_hat_k[k], 2) : "n/a", c.flaky ? "flaky" : "", c.gate ? (c.gate.held ? "held" : "broken") : ""];
        }), "figures cells"));
    });
    append(node, cells);
    return node;
  }

  /* ---- plots (Chart.js) ---- */
  function chartBox(id, title, height) {
    var canvas = el("canvas", {id: id, role: "img", "aria-label": title});
    return {figure: el("figure", {class: "plot"}, el("figcaption", null, title),
                       el("div", {class: "canvas", style: "height:" + (height || 260) + "px"}, canvas)), canvas: canvas};
  }
  /* A note under a plot whose figures no run reported (tokens from a provider that sends no usage). */
  function emptyNote(box, text) { append(box.figure, el("p", {class: "empty"}, text)); }
  function draw(box, config) {
    config.options = Object.assign({animation: false, responsive: true, maintainAspectRatio: false}, config.options || {});
    return new Chart(box.canvas, config);
  }
  function plotsSection() {
    var node = section("plots", "Plots"), grid = el("div", {class: "plots"});
    append(node, grid);
    var boxes = {
      rate: chartBox("plot-pass-rate", "Pass rate per arm, with its 95% Wilson interval"),
      k: chartBox("plot-pass-k", "pass@k (solid) and pass^k (dashed) over k"),
      tokens: chartBox("plot-tokens", "Tokens and cost per passed case, per arm"),
      causes: chartBox("plot-failures", "Failure causes per arm"),
      duration: chartBox("plot-duration", "Duration of the runs (seconds), per arm")
    };
    Object.keys(boxes).forEach(function (k) { append(grid, boxes[k].figure); });
    return {node: node, boxes: boxes};
  }
  function drawPlots(boxes) {
    var arms = summary.arms, labels = arms.map(function (a) { return a.arm; });
    draw(boxes.rate, {type: "bar", data: {labels: labels, datasets: [
      {label: "pass rate", data: arms.map(function (a) { return a.pass_rate; }), backgroundColor: "#9cc7f0", order: 1},
      {label: "95% interval", data: arms.map(function (a) { return a.interval; }), backgroundColor: "#1f3b57",
       barPercentage: 0.08, grouped: false, order: 0}]},  // a lower order is drawn on top
      options: {scales: {y: {min: 0, max: 1, ticks: {format: {style: "percent"}}}}}});
    var kDatasets = [], maxK = 0;
    arms.forEach(function (a, i) {
      var ks = Object.keys(a.pass_at_k).map(Number);
      maxK = Math.max(maxK, ks.length);
      kDatasets.push({label: "pass@k " + a.arm, data: ks.map(function (k) { return {x: k, y: a.pass_at_k[k]}; }),
                      borderColor: COLORS[i % 10], backgroundColor: COLORS[i % 10], pointRadius: 4});
      kDatasets.push({label: "pass^k " + a.arm, data: ks.map(function (k) { return {x: k, y: a.pass_hat_k[k]}; }),
                      borderColor: COLORS[i % 10], backgroundColor: COLORS[i % 10], borderDash: [6, 4], pointRadius: 4, pointStyle: "rect"});
    });
    if (maxK < 2) emptyNote(boxes.k, "One scored run per case: run with --runs N for the curves up to k = N.");
    draw(boxes.k, {type: "line", data: {datasets: kDatasets},
      options: {scales: {x: {type: "linear", min: 1, max: Math.max(maxK, 2), ticks: {stepSize: 1}, title: {display: true, text: "k"}},
                         y: {min: 0, max: 1}}}});
    draw(boxes.tokens, {type: "bar", data: {labels: labels, datasets: [
      {label: "tokens per pass", data: arms.map(function (a) { return a.tokens_per_pass; }), backgroundColor: "#59a14f", yAxisID: "y"},
      {label: "cost per pass (USD)", data: arms.map(function (a) { return a.cost_per_pass; }), backgroundColor: "#edc948", yAxisID: "cost"}]},
      options: {scales: {y: {beginAtZero: true, title: {display: true, text: "tokens"}},
                         cost: {beginAtZero: true, position: "right", grid: {drawOnChartArea: false}, title: {display: true, text: "USD"}}}}});
    if (arms.every(function (a) { return a.tokens_per_pass === null && a.cost_per_pass === null; }))
      emptyNote(boxes.tokens, "No passed run with tokens or cost reported by its provider.");
    var causes = [];
    arms.forEach(function (a) { Object.keys(a.failures).forEach(function (c) { if (causes.indexOf(c) < 0) causes.push(c); }); });
    if (!causes.length) emptyNote(boxes.causes, "No run failed.");
    draw(boxes.causes, {type: "bar", data: {labels: labels, datasets: causes.map(function (c, i) {
      return {label: c, data: arms.map(function (a) { return a.failures[c] || 0; }), backgroundColor: COLORS[i % 10]};
    })}, options: {scales: {x: {stacked: true}, y: {stacked: true, beginAtZero: true, ticks: {precision: 0}, title: {display: true, text: "runs"}}}}});
  }
  function drawDuration(box) {
    var labels = summary.arms.map(function (a) { return a.arm; }), values = runs.map(function (r) { return r.duration; });
    if (!values.length) return;
    var max = Math.max.apply(null, values.concat([1e-3])), bins = Math.min(20, Math.max(5, Math.ceil(Math.sqrt(values.length))));
    var width = max / bins, edges = [];
    for (var i = 0; i < bins; i++) edges.push((i * width).toFixed(2) + "-" + ((i + 1) * width).toFixed(2));
    var counts = {};
    labels.forEach(function (l) { counts[l] = new Array(bins).fill(0); });
    runs.forEach(function (r) {
      var b = Math.min(bins - 1, Math.floor(r.duration / width)), arm = armOf(r);
      if (counts[arm]) counts[arm][b] += 1;
    });
    draw(box, {type: "bar", data: {labels: edges, datasets: labels.map(function (l, i) {
      return {label: l, data: counts[l], backgroundColor: COLORS[i % 10]};
    })}, options: {scales: {y: {beginAtZero: true, ticks: {precision: 0}, title: {display: true, text: "runs"}},
                            x: {title: {display: true, text: "seconds"}}}}});
  }

  /* ---- comparison and regression ---- */
  function pairedBlock(p) {
    var same = p.pairs - p.pass_to_fail - p.fail_to_pass;
    return el("div", {class: "paired"}, el("p", {class: "verdict"}, p.verdict),
      table(["A", "B", "pairs", "A passes", "B passes", "fixed (fail\u2192pass)", "broke (pass\u2192fail)", "same", "McNemar p"],
            [[p.a, p.b, p.pairs, p.a_passes, p.b_passes, p.fail_to_pass, p.pass_to_fail, same, num(p.p_value, 3)]], "paired-summary"),
      differences(p),
      p.flips.length ? table(["case", "fixed (fail\u2192pass)", "broke (pass\u2192fail)"],
        p.flips.map(function (f) { return [f.case, f.fail_to_pass, f.pass_to_fail]; }), "flips") : el("p", null, "No case flipped."));
  }
  function differences(p) {  // B - A with its 95% interval, per figure; none in a report of an earlier version
    if (!p.difference) return null;
    var signed = function (v) { return (v >= 0 ? "+" : "") + v.toFixed(2); };
    var rows = [["pass rate", p.difference, "Newcombe (paired proportions)"]];
    ["outcome", "process"].forEach(function (k) { if (p.means && p.means[k]) rows.push([k + " mean", p.means[k], p.means[k].method === "normal" ? "normal" : "paired bootstrap"]); });
    return el("div", null, table(["figure", "B \u2212 A", "95% interval", "pairs", "interval by"],
      rows.map(function (r) { return [r[0], signed(r[1].estimate), signed(r[1].low) + " to " + signed(r[1].high), r[1].pairs, r[2]]; }), "differences"),
      el("p", {class: "note"}, p.detectable == null ? "No difference is detectable with these pairs (none disagreed, or too few)."
        : "Smallest difference in pass rate these " + p.pairs + " pairs detect: \u00b1" + p.detectable.toFixed(2) +
          " (two-sided 0.05, power 0.8, at the observed " + Math.round(100 * p.discordance) + "% of pairs disagreeing)."));
  }
  /* The judges: runs graded by a judge not calibrated on its rubric, and the variance of judged scores split
     into the judge's own and run to run (run --judge-repeats). */
  function judgesSection() {
    var j = summary.judges, node = section("judges", "Judges");
    var off = j.calibrations.filter(function (c) { return c.status !== "calibrated"; });
    append(node, el("p", {class: j.uncalibrated_runs ? "warn" : "note"}, j.uncalibrated_runs + " of " + many(j.judged_runs, "judged run") +
      " graded by a judge not calibrated on its rubric" + (off.length ? ": " + off.map(function (c) {
        return c.judge + " " + c.status + (c.kappa === null ? "" : " (kappa " + num(c.kappa, 2) + ", needs " + num(c.min_kappa, 2) + ")") + ", " + many(c.runs, "run");
      }).join("; ") : "")));
    if (j.noise.length) append(node, el("h3", null, "Judge noise"),
      table(["arm", "case", "runs \u00d7 repeats", "judge variance", "run-to-run variance", "total variance"],
        j.noise.map(function (n) { return [n.arm, n.case, n.runs + " \u00d7 " + n.repeats, num(n.judge_variance, 4),
          num(n.run_variance, 4), num(n.total_variance, 4)]; }), "judge-noise"));
    return node;
  }
  function robustnessSection() {  // report.json's robustness: each fault arm's recovery, each case against its clean twin
    var r = summary.robustness, node = section("robustness", "Robustness: faults injected into tool results");
    var mean = function (v) { return v === null || v === undefined ? "n/a" : v.toFixed(1); };
    if (r.recovery.length) append(node, el("h3", null, "Faults"), table(
      ["arm", "faulted runs", "recovered", "fault_not_handled", "retries / run", "calls to recover"],
      r.recovery.map(function (a) { return [a.arm, a.faulted, a.recovered + " (" + pct(a.recovery) + ")", a.not_handled, mean(a.retries), mean(a.calls_to_recover)]; }), "recovery"));
    if (r.table.length) append(node, el("h3", null, "Against the clean twin (faults off)"), table(
      ["case", "arm", "faults", "clean", "faulty", "difference"],
      r.table.map(function (t) { return [t.case, t.arm, t.faults, t.clean_passed + "/" + t.clean_runs, t.passed + "/" + t.runs,
        t.difference === null ? "n/a" : (t.difference >= 0 ? "+" : "") + (100 * t.difference).toFixed(0) + " pts"]; }), "robustness"));
    return node;
  }
  function comparisonSection() {
    var node = section("comparison", "Paired comparison");
    append(node, el("p", {class: "note"}, "Runs paired by case and run index, infrastructure errors left out; exact McNemar test on the pairs that disagree." +
      (summary.comparisons.length > 1 ? " Each comparison is of two arms that differ in one thing: the prompts within each provider, the providers within each prompt." : "")));
    summary.comparisons.forEach(function (p) { append(node, pairedBlock(p)); });
    if (summary.sequential) append(node, sequentialBlock(summary.sequential));
    return node;
  }
  function sequentialBlock(q) {  // run --until-decided: each comparison's decision, what the rounds spent and saved
    var spent = function (x, show) { return x.spent == null ? "\u2014" : show(x.spent) + " spent, about " + show(x.saved) + " saved"; };
    return el("div", {class: "sequential"}, el("h3", null, "Until decided"),
      el("p", {class: "note"}, "Sequential " + q.method + ": alpha " + q.alpha + ", margin \u00b1" + q.margin +
        ", cap " + q.cap + " runs of each case in each arm; round r is run r of every case in every arm still needed."),
      table(["comparison", "decision", "stopped after", "pairs", "B \u2212 A"], q.comparisons.map(function (c) {
        return [c.title, c.decision.replace("_", " "), c.stopped_after == null ? "\u2014" : "round " + c.stopped_after, c.pairs,
                c.difference == null ? "\u2014" : (c.difference >= 0 ? "+" : "") + c.difference.toFixed(2)];
      }), "decisions"),
      table(["rounds", "runs at the cap", "runs spent", "runs saved", "tokens", "cost"],
            [[q.rounds, q.runs.cap, q.runs.spent, q.runs.saved, spent(q.tokens, function (v) { return num(v, 0); }), spent(q.cost, usd)]], "spent"),
      el("p", null, q.summary), el("ul", null, q.comparisons.map(function (c) { return el("li", null, c.reason); })));
  }
  function regressionSection() {
    var r = summary.regression, node = section("regression", "Regression: before against after");
    append(node, el("p", null, "before: " + r.before), el("p", null, "after: " + r.after));
    append(node, table(["arm before", "arm after", "pass rate before", "pass rate after", "runs before", "runs after"],
      r.arms.map(function (a) { return [a.before.arm, a.after.arm, pct(a.before.pass_rate), pct(a.after.pass_rate), a.before.runs, a.after.runs]; }), "regression-arms"));
    function changes(title, list, key, cls) {  // paired runs that flipped, as the verdict counts them, and their cases
      var count = list.reduce(function (n, c) { return n + c[key]; }, 0);
      return [el("h3", null, title + ": " + (list.length ? many(count, "run") + " in " + many(list.length, "case") : "none")), list.length ?
        table(["case", "arm", "runs", "pass rate before", "pass rate after"],
              list.map(function (c) { return [c.case, c.arm, c[key], pct(c.before), pct(c.after)]; }), cls) : null];
    }
    append(node, changes("pass\u2192fail", r.pass_to_fail, "pass_to_fail", "pass-to-fail"),
           changes("fail\u2192pass", r.fail_to_pass, "fail_to_pass", "fail-to-pass"));
    if (r.only_before.length) append(node, el("p", null, "only before: " + r.only_before.join(", ")));
    if (r.only_after.length) append(node, el("p", null, "only after: " + r.only_after.join(", ")));
    if (r.changed && r.changed.length) {  // cells whose inputs changed between the folders: no regression of the agent
      append(node, el("h3", null, "changed inputs: " + many(r.changed.length, "change")),
        el("p", {class: "note"}, r.allow_changed ? "Kept in the paired analysis (--allow-changed)." :
          "Left out of the paired analysis and of pass\u2192fail and fail\u2192pass" +
          (r.left_out.length ? " (" + r.left_out.join(", ") + ")" : "") + "; --allow-changed keeps them."),
        table(["changed", "what"], r.changed.map(function (c) { return [c.name, c.change]; }), "changed-inputs"));
    }
    append(node, pairedBlock(r.paired));
    return node;
  }

  /* ---- the run list ---- */
  function options(name, values) {
    var select = el("select", {id: "filter-" + name, "aria-label": name, onchange: function () {
      state.filters[name] = select.value; refreshList();
    }}, el("option", {value: ""}, "every " + name));
    values.forEach(function (v) { append(select, el("option", {value: v}, v)); });
    return el("label", null, name + " ", select);
  }
  function distinct(key) {
    var seen = {};
    runs.forEach(function (r) { seen[key(r)] = true; });
    return Object.keys(seen).sort();
  }
  function runsSection() {
    var node = section("runs", "Runs");
    node.appendChild(el("p", {id: "runs-loading"}, "loading the runs\u2026"));
    return node;
  }
  function fillRuns(node) {
    node.removeChild(document.getElementById("runs-loading"));
    var filters = el("div", {class: "filters"},
      options("status", ["pass", "fail", "error"]), options("group", distinct(group)), options("arm", distinct(armOf)),
      options("failure", distinct(function (r) { return r.failure || "none"; })));
    append(node, filters, el("p", {id: "runs-count"}),
      el("div", {class: "scroll"}, el("table", {id: "run-list"}, el("thead", null, el("tr", null,
        ["#", "case", "arm", "run", "status", "failure", "outcome", "process", "calls", "duration", "tokens"].map(function (h) { return el("th", null, h); }))),
        el("tbody"))),
      el("button", {id: "more-runs", type: "button", onclick: function () { showMore(); }}, "show more runs"),
      el("section", {id: "transcript", "aria-live": "polite"}));
    refreshList();
  }
  function matches(r) {
    var f = state.filters;
    return (!f.status || r.status === f.status) && (!f.group || group(r) === f.group) &&
           (!f.arm || armOf(r) === f.arm) && (!f.failure || (r.failure || "none") === f.failure);
  }
  function refreshList() {
    state.list = [];
    for (var i = 0; i < runs.length; i++) if (matches(runs[i])) state.list.push(i);
    state.shown = 0;
    document.querySelector("#run-list tbody").textContent = "";
    showMore();
  }
  function showMore() {
    var body = document.querySelector("#run-list tbody"), end = Math.min(state.list.length, state.shown + PAGE);
    var rows = document.createDocumentFragment();
    for (var i = state.shown; i < end; i++) rows.appendChild(runRow(state.list[i]));
    body.appendChild(rows);
    state.shown = end;
    document.getElementById("runs-count").textContent = "showing " + end + " of " + state.list.length +
      " runs" + (state.list.length < runs.length ? " (" + runs.length + " in all)" : "");
    document.getElementById("more-runs").hidden = end >= state.list.length;
  }
  /* How a step that did not run is counted in the calls column, by its status (runner.run.trajectory.Step). */
  var NOT_RUN = {refused: "refused", invalid: "invalid", truncated: "cut off", no_result: "no result"};
  /* "3 (1 refused, 2 cut off)": the calls whose tool ran, then the attempts that did not, by kind. */
  function callsCell(r) {
    var ran = 0, apart = {}, order = [];
    r.trace.forEach(function (s) {
      if (s.status === "executed" || s.status === "recovered") { ran += 1; return; }
      var kind = NOT_RUN[s.status] || s.status;
      if (!apart[kind]) { apart[kind] = 0; order.push(kind); }
      apart[kind] += 1;
    });
    return ran + (order.length ? " (" + order.map(function (k) { return apart[k] + " " + k; }).join(", ") + ")" : "");
  }
  function runRow(i) {
    var r = runs[i], anchor = "#run-" + (i + 1);  // numbered from 1, as the list's # and the run files are
    var link = el("a", {href: anchor, class: "run-link"}, r.case);
    return el("tr", {class: "run " + r.status, "data-index": i, onclick: function () { location.hash = anchor; }},
      el("td", null, i + 1), el("td", null, link), el("td", null, armOf(r)), el("td", null, r.run),
      el("td", null, badge(r.status)), el("td", null, r.failure || ""), el("td", null, num(r.outcome, 2)),
      el("td", null, num(r.process, 2)), el("td", null, callsCell(r)), el("td", null, secs(r.duration)),
      el("td", null, num(r.tokens.total)));
  }

  /* ---- one run's transcript, drawn when opened ---- */
  function pre(text, cls) { return el("pre", {class: cls || ""}, text); }
  function folded(text, label) {
    var lines = text.split("\n").length;
    if (text.length <= FOLD_CHARS && lines <= FOLD_LINES) return pre(text, "result");
    return el("details", {class: "fold"}, el("summary", null, label + " (" + text.length + " characters, " + lines + " lines)"), pre(text, "result"));
  }
  function checksBlock(r) {
    if (!r.checks.length) return el("p", null, "no checks");
    return el("ul", {class: "checks"}, r.checks.map(function (c) {
      return el("li", {class: c.passed ? "ok" : "bad"}, el("span", {class: "mark"}, c.passed ? "pass" : "FAIL"), " ",
        el("code", null, c.check), " ", el("span", {class: "category"}, c.category), " ", el("span", {class: "message"}, c.message),
        c.calibration ? el("span", {class: c.calibration.status === "calibrated" ? "category" : "warn judge-calibration"},
          " judge " + c.calibration.judge + ": " + c.calibration.status +
          (c.calibration.kappa === null ? "" : " (kappa " + num(c.calibration.kappa, 2) + ")")) : null,
        c.scores && c.scores.length ? el("span", {class: "category"}, " scores " + c.scores.map(function (x) { return num(x, 2); }).join(", ")) : null,
        c.reasoning ? el("details", null, el("summary", null, "judge's reasoning"), pre(c.reasoning)) : null);
    }));
  }
  function commandsBlock(r) {
    if (!r.commands || !r.commands.length) return null;
    return [el("h4", null, "Setup and verify"), r.commands.map(function (c) {
      var failed = c.exit_code !== 0 || c.timed_out;
      var head = c.phase + ": " + c.command + " \u2014 " + (c.timed_out ? "timed out" : "exit " + num(c.exit_code)) + " \u00b7 " + secs(c.duration);
      return el("details", {class: "command" + (failed ? " bad" : ""), open: failed ? "open" : false}, el("summary", null, head),
        el("h5", null, "stdout"), pre(c.stdout || ""), el("h5", null, "stderr"), pre(c.stderr || ""));
    })];
  }
  function changesBlock(r) {
    var ch = r.changes || {}, items = [];
    ["added", "changed", "deleted"].forEach(function (k) {
      (ch[k] || []).forEach(function (path) { items.push(el("li", {class: k}, k + " ", el("code", null, path))); });
    });
    return [el("h4", null, "Files changed"), items.length ? el("ul", {class: "changes"}, items) : el("p", null, "none")];
  }
  function callBlock(call, step) {
    var status = step ? step.status : call.status;
    var node = el("div", {class: "call" + (step && step.is_error ? " bad" : "")},
      el("div", {class: "call-head"}, "tool call ", el("code", null, call.name), " \u00b7 " + status +
        (step ? " \u00b7 " + secs(step.duration) : "") + (step && step.is_error ? " \u00b7 error" : "") +
        (step && step.fault ? " \u00b7 fault " + step.fault : "")));
    append(node, el("h5", null, "arguments"), pre(call.raw_arguments !== null && call.raw_arguments !== undefined ? call.raw_arguments : json(call.arguments), "args"));
    if (call.error) append(node, el("p", {class: "warn"}, call.error));
    if (step) append(node, el("h5", null, "result"), folded(step.result, "result"));
    return node;
  }
  function requestBlock(q, steps) {
    var tokens = "tokens " + num(q.prompt) + " in, " + num(q.completion) + " out";
    var node = el("div", {class: "request"}, el("div", {class: "request-head"},
      "model request " + (q.index + 1) + " \u00b7 finish " + num(q.finish_reason) + (q.outcome ? " (" + q.outcome + ")" : "") +
      " \u00b7 " + tokens + (q.cost !== null && q.cost !== undefined ? " \u00b7 " + usd(q.cost) : "") + " \u00b7 latency " + secs(q.latency) + (q.ttft !== null && q.ttft !== undefined ? " \u00b7 first token " + secs(q.ttft) : "") +
      (q.attempts && q.attempts.length > 1 ? " \u00b7 " + q.attempts.length + " tries" : "")));
    var failed = (q.attempts || []).filter(function (a) { return a.error_kind; });
    if (failed.length) append(node, el("details", {class: "attempts"}, el("summary", null, failed.length + (failed.length === 1 ? " failed try" : " failed tries")),
      el("ul", null, failed.map(function (a) {
        return el("li", null, "try " + a.number + ": " + a.error_kind + (a.status ? " (HTTP " + a.status + ")" : "") +
          (a.message ? " " + a.message : "") + " \u00b7 " + secs(a.duration) +
          (a.wait !== null && a.wait !== undefined ? ", then waited " + secs(a.wait) + (a.wait_source ? " (" + a.wait_source + ")" : "") : ""));
      }))));
    if (q.reasoning) append(node, el("details", {class: "reasoning"}, el("summary", null, "reasoning (" + q.reasoning.length + " characters)"), pre(q.reasoning)));
    if (q.text) append(node, pre(q.text, "reply"));
    if (q.text_calls && q.text_calls.length) append(node, el("p", {class: "warn"}, "tool calls written as text, not run: " +
      q.text_calls.map(function (c) { return c.name + " " + JSON.stringify(c.arguments); }).join("; ")));
    q.tool_calls.forEach(function (call) {
      var step = null;
      for (var i = 0; i < steps.length; i++) if (steps[i].call_id === call.id && steps[i].request === q.index) { step = steps[i]; break; }
      append(node, callBlock(call, step));
    });
    return node;
  }
  function saidBlock(r, q) {  // the system and user messages this request was the first to carry (none in older reports)
    var said = r.said ? r.said[r.model_requests.indexOf(q)] || [] : [];
    return said.map(function (m) {
      return el("div", {class: "said " + m.role}, el("div", {class: "said-head"}, m.role === "system" ? "system prompt" : "user"),
        folded(m.text, m.role));
    });
  }
  function turnsBlock(r) {
    var turns = {}, order = [];
    function bucket(t) { t = t === null || t === undefined ? 0 : t; if (!turns[t]) { turns[t] = {requests: [], loose: []}; order.push(t); } return turns[t]; }
    r.model_requests.forEach(function (q) { bucket(q.turn).requests.push(q); });
    var known = {};
    r.model_requests.forEach(function (q) { q.tool_calls.forEach(function (c) { known[q.index + "/" + c.id] = true; }); });
    r.trace.forEach(function (s) { if (!known[s.request + "/" + s.call_id]) bucket(s.turn).loose.push(s); });
    order.sort(function (a, b) { return a - b; });
    return [el("h4", null, "Transcript"), order.map(function (t) {
      var b = turns[t];
      return el("div", {class: "turn"}, el("h5", null, "turn " + (Number(t) + 1)),
        b.requests.map(function (q) { return [saidBlock(r, q), requestBlock(q, r.trace)]; }),
        b.loose.map(function (s) { return callBlock({name: s.name, arguments: s.arguments, status: s.status}, s); }));
    })];
  }
  function openRun(i) {
    var r = runs[i], box = document.getElementById("transcript");
    if (!r || !box) return;
    box.textContent = "";
    var facts = [["status", badge(r.status)], ["arm", armOf(r)], ["run", r.run], ["failure cause", r.failure || "none"],
      ["duration", secs(r.duration)], ["model requests", r.requests], ["tool calls", callsCell(r)],
      ["tokens", num(r.tokens.prompt) + " in, " + num(r.tokens.completion) + " out, " + num(r.tokens.total) + " total"],
      ["cost", usd(r.cost)], ["outcome", num(r.outcome, 2)], ["process", num(r.process, 2)],
      ["sandbox", r.sandbox ? r.sandbox.mode : "n/a"]];
    if (r.tool_defs) facts.splice(2, 0, ["tool definitions", toolDefs(r)]);
    if (r.cause) facts.splice(4, 0, ["cause", (r.error_kind ? r.error_kind + ": " : "") + r.cause]);
    var inj = r.injection;  // only for a case with injections or its clean twin
    if (inj) facts.push(["injection", (inj.attacked ? "attacked (" + (inj.planted.join(", ") || "nothing planted") + ")" : "clean twin") +
      "; utility " + (inj.utility === null ? "n/a" : inj.utility ? "yes" : "no") +
      (inj.attacked ? "; attack " + (inj.attack_success === null ? "not judged" : inj.attack_success ? "succeeded" : "failed") : "")]);
    var tm = r.trajectory_match;  // only when the case gives a reference trajectory
    if (tm) facts.push(["trajectory", ["exact", "in_order", "any_order"].filter(function (k) { return tm[k]; }).join(", ") +
      (tm.exact || tm.in_order || tm.any_order ? "; " : "no match; ") + "names precision " + num(tm.name_precision, 2) +
      ", recall " + num(tm.name_recall, 2) + "; calls precision " + num(tm.call_precision, 2) + ", recall " + num(tm.call_recall, 2)]);
    append(box, el("h3", {id: "transcript-title"}, r.case),
      el("dl", {class: "facts"}, facts.map(function (f) { return [el("dt", null, f[0]), el("dd", null, f[1])]; })),
      el("h4", null, "Checks"), checksBlock(r), commandsBlock(r), changesBlock(r), turnsBlock(r),
      el("h4", null, "Final reply"), pre(r.final_reply || "", "reply final"),
      r.warnings.length ? [el("h4", null, "Warnings"), el("ul", null, r.warnings.map(function (w) { return el("li", null, w); }))] : null);
    box.scrollIntoView();
  }
  function route() {
    var m = /^#run-(\d+)$/.exec(location.hash);
    if (m) openRun(Number(m[1]) - 1);
  }

  /* ---- start: summary and plots now, runs after the first paint ---- */
  append(app, header(), summarySection());
  var plots = plotsSection();
  append(app, plots.node);
  if (summary.robustness) append(app, robustnessSection());
  if (summary.comparisons.length) append(app, comparisonSection());
  if (summary.judges) append(app, judgesSection());
  if (summary.regression) append(app, regressionSection());
  var runsNode = runsSection();
  append(app, runsNode);
  drawPlots(plots.boxes);
  function loadRuns() {  // the runs' JSON comes after this script: read once the parser has it all
    runs = JSON.parse(document.getElementById("runs-data").textContent);
    drawDuration(plots.boxes.duration);
    fillRuns(runsNode);
    window.addEventListener("hashchange", route);
    route();
    document.body.setAttribute("data-ready", "true");
    performance.mark("tooltrial-runs-ready");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", loadRuns);
  else loadRuns();
})();
