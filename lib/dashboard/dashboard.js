// pstrain's dashboard page (lib/dashboard/page.h; what each chart shows:
// share/doc/dashboard.md). Draws the runs' curves with dygraphs from the
// JSON of the element #pstrain-data (the report), or from polling the URL
// that #pstrain-live names (the live page), redrawing in place. The data is
// {"runs": [{"name": ..., "events": [...]}]}, events as pstrain --json
// prints them; any field may be missing. After each draw, #drawn holds what
// the charts laid out, read back from the Dygraph objects, for tests.
(function () {
  'use strict';

  var charts = {};      // chart id -> Dygraph
  var runOfLabel = {};  // chart id -> {series label -> run name}
  var runNames = [];    // the runs drawn last, in the data's order
  var PATTERNS = [null, [7, 3], [2, 2], [7, 2, 2, 2]];  // one per run

  function num(v) { return typeof v === 'number' && isFinite(v) ? v : null; }
  function field(e, name) { return num(e[name]); }
  function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function isWorker(e) { return e.role === 'worker'; }
  function isRank0Server(e) { return e.role === 'server' && (e.rank === 0 || e.rank === undefined); }

  // The runs of `data`, each with t0, the time of its first event.
  function runsOf(data) {
    var runs = isObject(data) && Array.isArray(data.runs) ? data.runs : [];
    return runs.filter(isObject).map(function (run, i) {
      var events = Array.isArray(run.events) ? run.events.filter(isObject) : [];
      var t0 = Infinity;
      events.forEach(function (e) { var t = field(e, 'time'); if (t !== null && t < t0) t0 = t; });
      return {name: String(run.name || 'run ' + (i + 1)), index: i, events: events,
              t0: isFinite(t0) ? t0 : 0};
    });
  }

  function secondsOf(run, e) { var t = field(e, 'time'); return t === null ? null : t - run.t0; }

  // The series of one chart: labels in the order first seen, their points
  // and the run each belongs to.
  function Series() { this.labels = []; this.points = {}; this.runs = {}; this.run = {}; }
  Series.prototype.add = function (label, run, x, y) {
    if (x === null || y === null) return;
    if (!Object.prototype.hasOwnProperty.call(this.points, label)) {
      this.labels.push(label);
      this.points[label] = [];
      this.runs[label] = run.name;
      this.run[label] = run.index;
    }
    this.points[label].push([x, y]);
  };
  // Dygraph's native rows: [x, y1, ..., yn] sorted by x, null where a
  // series has no value at that x.
  Series.prototype.rows = function () {
    var byX = {}, rows = [], n = this.labels.length;
    this.labels.forEach(function (label, i) {
      this.points[label].forEach(function (p) {
        var row = byX[p[0]];
        if (!row) {
          row = [p[0]];
          for (var k = 0; k < n; k++) row.push(null);
          byX[p[0]] = row;
          rows.push(row);
        }
        row[i + 1] = p[1];
      });
    }, this);
    rows.sort(function (a, b) { return a[0] - b[0]; });
    return rows;
  };
  Series.prototype.xRange = function () {
    var lo = Infinity, hi = -Infinity;
    this.labels.forEach(function (label) {
      this.points[label].forEach(function (p) { lo = Math.min(lo, p[0]); hi = Math.max(hi, p[0]); });
    }, this);
    return [lo, hi];
  };

  // One series per (run, worker rank) of `name` from step and progress.
  function workerCurves(runs, name) {
    var s = new Series();
    runs.forEach(function (run) {
      run.events.forEach(function (e) {
        if ((e.event === 'step' || e.event === 'progress') && isWorker(e))
          s.add(run.name + ': rank ' + e.rank, run, secondsOf(run, e), field(e, name));
      });
    });
    return s;
  }

  function usesPerplexity(runs) {
    return runs.some(function (run) {
      return run.events.some(function (e) {
        return (e.event === 'eval' || e.event === 'summary') && field(e, 'test_perplexity') !== null;
      });
    });
  }

  // One series per run: each eval, then the server's final score.
  function evalCurves(runs, name) {
    var s = new Series();
    runs.forEach(function (run) {
      run.events.forEach(function (e) {
        if (e.event === 'eval' || (e.event === 'summary' && isRank0Server(e)))
          s.add(run.name, run, secondsOf(run, e), field(e, name));
      });
    });
    return s;
  }

  // Per run and worker rank, the seconds of its latest progress or summary;
  // waiting from the server summary's mean when the worker's lacks it.
  function timeBars(runs) {
    var s = new Series();
    runs.forEach(function (run) {
      var latest = {}, meanWaiting = null;
      run.events.forEach(function (e) {
        if (e.event === 'summary' && isRank0Server(e)) meanWaiting = field(e, 'waiting_seconds');
        if ((e.event === 'progress' || e.event === 'summary') && isWorker(e) && num(e.rank) !== null)
          latest[e.rank] = e;
      });
      Object.keys(latest).map(Number).sort(function (a, b) { return a - b; }).forEach(function (rank) {
        var e = latest[rank], waiting = field(e, 'waiting_seconds');
        s.add(run.name + ': compute', run, rank, field(e, 'compute_seconds'));
        s.add(run.name + ': communication', run, rank, field(e, 'communication_seconds'));
        s.add(run.name + ': waiting', run, rank, waiting !== null ? waiting : meanWaiting);
      });
    });
    return s;
  }

  // One series per run: the rank-0 server's latest staleness histogram.
  function stalenessBars(runs) {
    var s = new Series();
    runs.forEach(function (run) {
      var histogram = null;
      run.events.forEach(function (e) {
        if ((e.event === 'summary' || e.event === 'progress') && isRank0Server(e) &&
            isObject(e.staleness_histogram))
          histogram = e.staleness_histogram;
      });
      if (!histogram) return;
      Object.keys(histogram).forEach(function (k) {
        var x = parseInt(k, 10);
        s.add(run.name, run, isFinite(x) ? x : null, num(histogram[k]));
      });
    });
    return s;
  }

  // Series k of n as bars side by side around each x: dygraphs'
  // barChartPlotter example, grouped.
  function barPlotter(e) {
    var g = e.dygraph, ctx = e.drawingContext;
    var unit = Math.abs(g.toDomXCoord(1) - g.toDomXCoord(0));
    var width = unit * 0.8 / Math.max(1, e.seriesCount);
    var bottom = g.toDomYCoord(0);
    ctx.fillStyle = e.color;
    e.points.forEach(function (p) {
      if (!isFinite(p.canvasx) || !isFinite(p.canvasy)) return;
      var left = p.canvasx - unit * 0.4 + width * e.seriesIndex;
      ctx.fillRect(left, Math.min(p.canvasy, bottom), width, Math.abs(bottom - p.canvasy));
    });
  }

  // Ticks on whole numbers only, at most one per 40 pixels.
  function integerTicker(min, max, pixels) {
    var lo = Math.ceil(min), hi = Math.floor(max), ticks = [];
    var step = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(1, pixels / 40)));
    for (var v = lo; v <= hi; v += step) ticks.push({v: v, label: String(v)});
    return ticks;
  }

  function lineOptions(spec, series) {
    var perSeries = {};
    series.labels.forEach(function (label) {
      perSeries[label] = {strokePattern: PATTERNS[series.run[label] % PATTERNS.length]};
    });
    return {series: perSeries, connectSeparatedPoints: true, strokeWidth: 1.5};
  }

  function barOptions(spec, series) {
    var range = series.xRange();
    return {plotter: barPlotter, includeZero: true, dateWindow: [range[0] - 0.5, range[1] + 0.5],
            axes: {x: {ticker: integerTicker, drawGrid: false,
                       valueFormatter: function (x) { return spec.xname + ' ' + x; }}}};
  }

  // Draws `series` in the chart `id`, in place when it exists.
  function drawChart(id, spec, series) {
    var div = document.getElementById(id);
    runOfLabel[id] = series.runs;
    if (series.labels.length === 0) {
      if (charts[id]) charts[id].destroy();
      delete charts[id];
      div.textContent = '';
      var empty = document.createElement('div');
      empty.className = 'empty';
      empty.textContent = spec.title + ': nothing to draw (' + spec.empty + ')';
      div.appendChild(empty);
      return;
    }
    var options = (spec.bars ? barOptions : lineOptions)(spec, series);
    options.labels = [spec.xname].concat(series.labels);
    options.title = spec.title;
    options.xlabel = spec.xlabel;
    options.ylabel = spec.ylabel;
    options.legend = 'always';
    options.labelsDiv = id + '-legend';
    if (charts[id]) {
      options.file = series.rows();
      charts[id].updateOptions(options);
    } else {
      div.textContent = '';
      options.drawCallback = writeDrawn;
      charts[id] = new Dygraph(div, series.rows(), options);
    }
  }

  // The flags of a run's job event, or else what its rank-0 listen and
  // summary events tell.
  function flagsOf(run) {
    var flags = null, fallback = {};
    run.events.forEach(function (e) {
      if (e.event === 'job' && isObject(e.flags)) flags = e.flags;
      if (e.event === 'listen' && isRank0Server(e)) {
        if (isObject(e.job)) Object.assign(fallback, e.job);
        if (e.world_size !== undefined) fallback.world_size = e.world_size;
      }
      if (e.event === 'summary' && isRank0Server(e) && e.mode !== undefined) fallback.mode = e.mode;
    });
    return flags || fallback;
  }

  function shown(v) { return v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v); }

  // A table: one row per flag, one column per run; values that differ
  // between runs are marked.
  function drawFlags(runs) {
    var all = runs.map(flagsOf), names = {};
    all.forEach(function (f) { Object.keys(f).forEach(function (k) { names[k] = true; }); });
    var div = document.getElementById('flags');
    div.textContent = '';
    var keys = Object.keys(names).sort();
    if (keys.length === 0) {
      div.textContent = 'No flags: no job or listen event.';
      return;
    }
    var table = document.createElement('table');
    table.className = 'flags';
    var head = table.insertRow();
    ['flag'].concat(runs.map(function (r) { return r.name; })).forEach(function (text) {
      var th = document.createElement('th');
      th.textContent = text;
      head.appendChild(th);
    });
    keys.forEach(function (k) {
      var row = table.insertRow(), values = all.map(function (f) { return shown(f[k]); });
      var differs = values.some(function (v) { return v !== values[0]; });
      row.insertCell().textContent = k;
      values.forEach(function (v) {
        var cell = row.insertCell();
        cell.textContent = v;
        if (differs) cell.className = 'differs';
      });
    });
    div.appendChild(table);
  }

  // What each chart laid out: its series (from its labels), its points with
  // finite canvas coordinates (from layout_.points) and the runs they are of.
  function drawnSummary() {
    var out = {};
    Object.keys(SPECS).forEach(function (id) {
      var g = charts[id], entry = {series: 0, points: 0, runs: []}, seen = {};
      if (g && g.layout_ && g.layout_.points) {
        entry.series = g.getLabels().length - 1;
        g.layout_.points.forEach(function (points, i) {
          var n = points.filter(function (p) { return isFinite(p.canvasx) && isFinite(p.canvasy); }).length;
          entry.points += n;
          if (n > 0) seen[runOfLabel[id][g.layout_.setNames[i]]] = true;
        });
        entry.runs = runNames.filter(function (name) { return seen[name]; });
      }
      out[id] = entry;
    });
    var table = document.querySelector('#flags table');
    out.flags = {runs: table ? table.rows[0].cells.length - 1 : 0, rows: table ? table.rows.length - 1 : 0};
    return out;
  }

  function writeDrawn() { document.getElementById('drawn').textContent = JSON.stringify(drawnSummary()); }
  function setStatus(text) { document.getElementById('status').textContent = text; }

  var SPECS = {
    loss: {title: 'Training loss', xname: 'seconds', xlabel: 'seconds since the run started',
           ylabel: 'loss (one batch)', empty: 'no step event'},
    eval: {title: 'Test accuracy', xname: 'seconds', xlabel: 'seconds since the run started',
           ylabel: 'test accuracy (fraction)', empty: 'no eval event; see --eval_interval'},
    throughput: {title: 'Samples per second per worker', xname: 'seconds',
                 xlabel: 'seconds since the run started', ylabel: 'samples/s (mean since start)',
                 empty: 'no step event'},
    times: {title: 'Time per rank', xname: 'rank', xlabel: 'worker rank', ylabel: 'seconds',
            bars: true, empty: 'no worker summary yet'},
    staleness: {title: 'Staleness of pushes', xname: 'staleness', xlabel: 'staleness (versions behind)',
                ylabel: 'pushes', bars: true, empty: 'no histogram: sync runs have none'}
  };

  function render(data) {
    var runs = runsOf(data);
    runNames = runs.map(function (r) { return r.name; });
    var perplexity = usesPerplexity(runs);
    SPECS.eval.title = perplexity ? 'Test perplexity' : 'Test accuracy';
    SPECS.eval.ylabel = perplexity ? 'test perplexity (lower is better)' : 'test accuracy (fraction)';
    drawChart('loss', SPECS.loss, workerCurves(runs, 'loss'));
    drawChart('eval', SPECS.eval, evalCurves(runs, perplexity ? 'test_perplexity' : 'test_accuracy'));
    drawChart('throughput', SPECS.throughput, workerCurves(runs, 'samples_per_second'));
    drawChart('times', SPECS.times, timeBars(runs));
    drawChart('staleness', SPECS.staleness, stalenessBars(runs));
    drawFlags(runs);
    writeDrawn();
    return runs;
  }

  function poll(live) {
    fetch(live.url, {cache: 'no-store'}).then(function (reply) {
      if (!reply.ok) throw new Error('HTTP ' + reply.status);
      return reply.json();
    }).then(function (data) {
      render(data);
      setStatus('Live: updated ' + new Date().toLocaleTimeString());
    }).catch(function (err) {
      setStatus('Live: ' + live.url + ': ' + err.message);
    }).then(function () {
      setTimeout(function () { poll(live); }, num(live.poll_ms) || 1000);
    });
  }

  function start() {
    var data = document.getElementById('pstrain-data');
    if (data) {
      var runs = render(JSON.parse(data.textContent));
      setStatus(runs.map(function (r) { return r.name + ' (' + r.events.length + ' events)'; }).join(', '));
      return;
    }
    poll(JSON.parse(document.getElementById('pstrain-live').textContent));
  }

  try {
    if (typeof Dygraph === 'undefined') throw new Error('dygraphs did not load');
    start();
  } catch (err) {
    setStatus('Cannot draw: ' + err.message);
    document.getElementById('drawn').textContent = JSON.stringify({error: String(err.message)});
  }
})();
