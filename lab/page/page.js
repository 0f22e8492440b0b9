// lockstep's page: draws each play's timeline from the view the lab embedded (lab/page.go), on
// demand as it scrolls into sight. It judges nothing: every sentence is the referee's, said in Go.
(function () {
  'use strict';
  var body = document.body;
  var failures = 0;

  // fail writes an error into the page, where a test (or a reader) sees it.
  function fail(msg) {
    failures++;
    body.dataset.errors = String(failures);
    var ul = document.getElementById('page-errors');
    if (ul) {
      var li = document.createElement('li');
      li.textContent = msg;
      ul.appendChild(li);
      ul.hidden = false;
    }
  }
  window.addEventListener('error', function (e) {
    fail('error: ' + e.message + (e.lineno ? ' (line ' + e.lineno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) { fail('unhandled rejection: ' + e.reason); });

  var view = JSON.parse(document.getElementById('lockstep-view').textContent);
  var drawn = [];   // the timelines drawn so far
  var active = null; // the timeline ←/→ move in
  var tip = null;

  function el(tag, cls, parent, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // when says a time of the play: "12.3 ms", "1.234 s".
  function when(us) {
    if (us >= 1e6) return (us / 1e6).toFixed(3) + ' s';
    return (us / 1000).toFixed(1) + ' ms';
  }

  // tickLabel is a ruler label: "0.2s", as the terminal's ruler says it, or "15ms" for a short
  // play.
  function tickLabel(us, step) {
    if (step < 1e5) return String(Math.round(us / 1000)) + 'ms';
    return (us / 1e6).toFixed(2).replace(/0+$/, '').replace(/\.$/, '') + 's';
  }

  // rulerStep is the ruler's step: a TTL, as the terminal's ruler has it, where that gives 2 to
  // 24 ticks; else a round 1, 2 or 5 × 10ⁿ µs giving about 8.
  function rulerStep(p) {
    if (p.ttl > 0 && p.end / p.ttl >= 2 && p.end / p.ttl <= 24) return p.ttl;
    var raw = p.end / 8, e = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), n = raw / e;
    return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * e;
  }

  function pct(us, end) { return (100 * us / end).toFixed(4) + '%'; }

  var barWords = {
    wait: 'waiting for its first stock read', hold: 'holds the lock', 'in': 'inside the critical section',
    over: 'overlap', frozen: 'frozen: none of its commands leave', cut: 'cut off from the lock server',
    dead: 'crashed'
  };

  // decode undoes, once, how the lab packed a play's marks and events (pagePlay.MarshalJSON):
  // a mark becomes [lane, at, class, glyph, label, first event, count], an event
  // [at, lane, word, mark].
  function decode(p) {
    if (p.decoded) return p;
    var marks = [], events = [], at = 0, first = 0, i;
    for (i = 0; i < p.marks.length; i += 5) {
      at += p.marks[i + 1];
      first += p.marks[i + 3];
      var st = view.styles[p.marks[i + 2]];
      marks.push([p.marks[i], at, st[0], st[1], st[2], first, p.marks[i + 4]]);
    }
    at = 0;
    for (i = 0; i < p.events.length; i += 4) {
      at += p.events[i];
      events.push([at, p.events[i + 1], p.events[i + 2], p.events[i + 3]]);
    }
    p.marks = marks;
    p.events = events;
    p.decoded = true;
    return p;
  }

  // draw draws the timeline of box (a .timeline placeholder) once.
  function draw(box) {
    if (box.dataset.drawn) return;
    box.dataset.drawn = '1';
    // A timeline drawn above the window grows past the height the page reserved for it (marks
    // that fall on one spot stack in rows): scroll by what it grew, so what is in sight stays put
    // (the page's own scroll anchoring, overflow-anchor: none in page.css).
    var above = box.getBoundingClientRect().bottom <= 0, before = box.offsetHeight;
    drawBox(box);
    if (above && box.offsetHeight !== before) window.scrollBy(0, box.offsetHeight - before);
  }

  // drawBox draws the timeline of box, a .timeline placeholder.
  function drawBox(box) {
    var p = decode(view.runs[+box.dataset.run].plays[+box.dataset.play]);
    var t = { box: box, p: p, cur: -1, zoom: 1, marks: [], names: [] };
    var head = el('div', 'tl-head', box);
    el('span', '', head, p.events.length + ' events' +
      (p.thinned ? ' (and ' + p.thinned + ' more commands, counted on their marks)' : '') +
      ' · ' + when(p.end) + ' · TTL ' + when(p.ttl));
    var minus = el('button', '', head, 'zoom −');
    var plus = el('button', '', head, 'zoom +');
    minus.type = plus.type = 'button';
    var tlBody = el('div', 'tl-body', box);
    var names = el('div', 'tl-names', tlBody);
    var scroll = el('div', 'tl-scroll', tlBody);
    var inner = el('div', 'tl-inner', scroll);
    t.scroll = scroll;
    t.inner = inner;
    el('div', 'name ruler', names, 'time');
    var ruler = el('div', 'track ruler', inner);
    var step = Math.max(rulerStep(p), 1);
    for (var x = 0; x <= p.end; x += step) {
      var tick = el('div', 'tick', ruler, tickLabel(x, step));
      tick.style.left = pct(x, p.end);
      var g = el('div', 'grid', inner);
      g.style.left = pct(x, p.end);
    }
    var tracks = [ruler];
    p.lanes.forEach(function (lane) {
      var n = el('div', 'name ' + lane.kind + ' lane', names, lane.name);
      n.title = lane.name;
      t.names.push(n);
      tracks.push(el('div', 'track ' + lane.kind, inner));
    });
    p.bars.forEach(function (b, i) {
      var bar = el('div', 'bar ' + b[3], tracks[b[0] + 1], b[4] || undefined);
      bar.style.left = pct(b[1], p.end);
      bar.style.width = pct(b[2] - b[1], p.end);
      bar.dataset.b = String(i);
      if (b[5] >= 0) bar.dataset.e = String(b[5]);
    });
    p.marks.forEach(function (m, i) {
      var mk = el('span', 'mk ' + m[2], tracks[m[0] + 1], m[3]);
      if (m[4]) el('sub', '', mk, m[4]);
      if (m[6] > 1) el('sub', '', mk, '×' + m[6]);
      mk.style.left = pct(m[1], p.end);
      mk.dataset.m = String(i);
      t.marks.push(mk);
    });
    t.tracks = tracks;
    t.nameEls = [names.firstChild].concat(t.names); // the ruler's name, then each lane's
    layMarks(t);
    t.cursor = el('div', 'cursor', inner);
    t.cursor.hidden = true;
    t.said = el('p', 'tl-said hint', box, 'Click a mark, or press → to walk through the ' + p.events.length + ' events.');
    minus.onclick = function () { zoom(t, 0.5); };
    plus.onclick = function () { zoom(t, 2); };
    box.addEventListener('click', function (e) {
      active = t;
      var mk = e.target.closest('.mk');
      if (mk) { move(t, p.marks[+mk.dataset.m][5]); return; }
      var bar = e.target.closest('.bar');
      if (bar && bar.dataset.e) move(t, +bar.dataset.e);
    });
    box.addEventListener('mouseenter', function () { active = t; });
    box.t = t;
    drawn.push(t);
  }

  // layMarks lays t's marks out so that none is drawn over a mark of another kind: in its lane, a
  // mark whose box would cover another's takes the next row down (the lane grows to hold it), at
  // its own time, never moved along the axis. Marks of one kind side by side may touch (a
  // waiter's tries); on the ruler, the rows under the time labels. Zooming lays them out again.
  var rowH = 16, maxRows = 4;
  function layMarks(t) {
    var p = t.p, width = t.inner.clientWidth, boxes = [];
    t.marks.forEach(function (mk, i) {
      var m = p.marks[i], w = mk.offsetWidth, x = width * m[1] / p.end;
      var left = mk.classList.contains('node') ? x - w : mk.classList.contains('lost') ? x : x - w / 2;
      boxes.push({ i: i, lane: m[0], left: left, right: left + w, style: m[2] + ' ' + m[3] + ' ' + m[4] });
    });
    boxes.sort(function (a, b) { return a.lane - b.lane || a.left - b.left; });
    var rows = {}; // lane → per row, the last box placed there
    boxes.forEach(function (b) {
      var lane = rows[b.lane] || (rows[b.lane] = []), first = b.lane < 0 ? 1 : 0, pick = -1;
      for (var r = first; r < first + maxRows && pick < 0; r++) {
        var last = lane[r];
        if (!last || last.right + 1 <= b.left || last.style === b.style) pick = r;
      }
      if (pick < 0) { // every row is taken here: the row that frees first
        pick = first;
        for (r = first; r < first + maxRows; r++) if (lane[r].right < lane[pick].right) pick = r;
      }
      lane[pick] = { right: Math.max(b.right, lane[pick] ? lane[pick].right : -Infinity), style: b.style };
      t.marks[b.i].style.top = (pick === 0 ? '' : (3 + rowH * pick) + 'px');
    });
    t.tracks.forEach(function (tr, k) {
      var n = rows[k - 1] ? rows[k - 1].length : 1, h = (22 + rowH * (n - 1)) + 'px';
      tr.style.height = h;
      t.nameEls[k].style.height = h;
    });
  }

  function zoom(t, f) {
    t.zoom = Math.min(64, Math.max(1, t.zoom * f));
    t.inner.style.width = 'calc(' + (100 * t.zoom) + '% - 48px)';
    layMarks(t);
    if (t.cur >= 0) show(t);
  }

  // move puts t's cursor on event i.
  function move(t, i) {
    var n = t.p.events.length;
    if (!n) return;
    t.cur = Math.max(0, Math.min(n - 1, i));
    show(t);
  }

  // show draws t's cursor and says its event, as the terminal's rewind does.
  function show(t) {
    var p = t.p, ev = p.events[t.cur];
    t.marks.forEach(function (m) { m.classList.remove('cur'); });
    t.names.forEach(function (n) { n.classList.remove('on'); });
    if (ev[3] >= 0) t.marks[ev[3]].classList.add('cur');
    if (ev[1] >= 0) t.names[ev[1]].classList.add('on');
    t.cursor.hidden = false;
    t.cursor.style.left = pct(ev[0], p.end);
    t.said.textContent = '';
    t.said.classList.remove('hint');
    el('b', '', t.said, '◀▶ ' + (t.cur + 1) + '/' + p.events.length + ' · ' + when(ev[0]) + ' ');
    t.said.appendChild(document.createTextNode(view.words[ev[2]]));
    var x = t.inner.clientWidth * ev[0] / p.end;
    if (x < t.scroll.scrollLeft || x > t.scroll.scrollLeft + t.scroll.clientWidth) {
      t.scroll.scrollLeft = Math.max(0, x - t.scroll.clientWidth / 2);
    }
  }

  // tipFor says what the mark or bar under the pointer is.
  function tipFor(target) {
    var box = target.closest('.timeline');
    if (!box || !box.t) return '';
    var p = box.t.p;
    if (target.classList.contains('mk')) {
      var m = p.marks[+target.dataset.m], ev = p.events[m[5]];
      var s = when(ev[0]) + ' · ' + view.words[ev[2]];
      if (m[6] > 1) s += ' (and ' + (m[6] - 1) + ' more like it here)';
      return s;
    }
    var b = p.bars[+target.dataset.b];
    if (b[5] >= 0) {
      return when(p.events[b[5]][0]) + ' · ' + view.words[p.events[b[5]][2]] + ' (' + when(b[1]) + ' to ' + when(b[2]) + ')';
    }
    return p.lanes[b[0]].name + ': ' + (barWords[b[3]] || b[3]) + ' from ' + when(b[1]) + ' to ' + when(b[2]);
  }

  document.addEventListener('mouseover', function (e) {
    var target = e.target.closest && e.target.closest('.mk, .bar');
    if (!target) { if (tip) tip.hidden = true; return; }
    if (!tip) tip = el('div', '', body);
    tip.id = 'tip';
    tip.textContent = tipFor(target);
    tip.hidden = !tip.textContent;
    tip.style.left = Math.min(e.clientX + 12, window.innerWidth - 300) + 'px';
    tip.style.top = (e.clientY + 16) + 'px';
  });

  // pick is the timeline the keys move in: the one last pointed at, else the first in sight.
  function pick() {
    if (active && document.body.contains(active.box)) return active;
    for (var i = 0; i < drawn.length; i++) {
      var r = drawn[i].box.getBoundingClientRect();
      if (r.bottom > 0 && r.top < window.innerHeight) return drawn[i];
    }
    return drawn[0] || null;
  }

  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var d = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity }[e.key];
    if (d === undefined) return;
    var t = pick();
    if (!t) return;
    e.preventDefault();
    active = t;
    if (d === -Infinity) move(t, 0);
    else if (d === Infinity) move(t, t.p.events.length - 1);
    else move(t, t.cur < 0 ? (d > 0 ? 0 : t.p.events.length - 1) : t.cur + d);
  });

  var boxes = Array.prototype.slice.call(document.querySelectorAll('.timeline'));

  function drawAll() { boxes.forEach(draw); }
  window.addEventListener('beforeprint', drawAll);

  // drawTarget draws the timelines of the run the address names (a cell's link), before the
  // browser scrolls to it.
  function drawTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var sec = id && document.getElementById(id);
    if (!sec) return;
    Array.prototype.forEach.call(sec.querySelectorAll('.timeline'), draw);
    var first = sec.querySelector('.timeline');
    if (first && first.t) active = first.t;
  }
  window.addEventListener('hashchange', drawTarget);

  drawTarget();
  boxes.forEach(function (b) {
    var r = b.getBoundingClientRect();
    if (r.bottom > -600 && r.top < window.innerHeight + 600) draw(b);
  });
  if ('IntersectionObserver' in window) {
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (en) {
        if (en.isIntersecting) { draw(en.target); io.unobserve(en.target); }
      });
    }, { rootMargin: '600px 0px' });
    boxes.forEach(function (b) { if (!b.dataset.drawn) io.observe(b); });
  } else {
    drawAll();
  }
  body.dataset.ready = '1';
  body.dataset.readyMs = String(Math.round(performance.now()));
})();
