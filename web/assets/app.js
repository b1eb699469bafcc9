// kproxy web page: the group list (/) and a group's timeline
// (/groups/{group}) drawn as SVG lanes. Served by the admin server, it
// polls /api/groups and /api/groups/{group}; written by `kproxy replay
// --format html`, it reads the report embedded in #kproxy-data and routes
// by the URL's hash. No library, nothing fetched from anywhere else.
(function () {
  'use strict';

  var POLL_MS = 2000;
  var embedded = document.getElementById('kproxy-data');
  var fileData = embedded ? JSON.parse(embedded.textContent) : null;
  var app, statusEl, crumb;
  var timer = null;
  var renders = 0;

  // ---- helpers ---------------------------------------------------------

  function esc(s) {
    return String(s == null ? '' : s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  // ms parses an RFC 3339 time (nanoseconds allowed) to epoch milliseconds.
  function ms(s) {
    if (s == null) return null;
    // Fast path for the report's own form, "2026-03-15T14:02:11.204123Z".
    if (s.length >= 20 && s.charCodeAt(s.length - 1) === 90 && s.charCodeAt(10) === 84) {
      var t = Date.UTC(+s.substr(0, 4), +s.substr(5, 2) - 1, +s.substr(8, 2), +s.substr(11, 2), +s.substr(14, 2), +s.substr(17, 2));
      if (s.length > 21 && s.charCodeAt(19) === 46) t += +('0' + s.slice(19, -1)) * 1000;
      if (!isNaN(t)) return t;
    }
    var m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(s);
    if (!m) return Date.parse(s);
    var frac = m[2] ? Number('0' + m[2]) * 1000 : 0;
    return Date.parse(m[1] + m[3]) + frac;
  }
  function pad(n, w) { n = String(n); while (n.length < w) n = '0' + n; return n; }
  function clock(t) {
    if (t == null) return '?';
    var d = new Date(t);
    return pad(d.getUTCHours(), 2) + ':' + pad(d.getUTCMinutes(), 2) + ':' + pad(d.getUTCSeconds(), 2) + '.' + pad(d.getUTCMilliseconds(), 3);
  }
  function dur(msv) {
    if (msv == null) return '?';
    if (msv < 1000) return (Math.round(msv * 10) / 10) + ' ms';
    return (Math.round(msv / 10) / 100) + ' s';
  }
  // parts formats a partition set: "round_topic[0 1]"; {} is "nothing",
  // null is "?" (unknown).
  function parts(p) {
    if (p == null) return '?';
    var topics = Object.keys(p).sort();
    if (!topics.length) return 'nothing';
    return topics.map(function (t) { return t + '[' + p[t].join(' ') + ']'; }).join(' ');
  }
  function offsets(o) {
    return Object.keys(o || {}).sort().map(function (t) {
      return t + Object.keys(o[t]).map(function (p) { return '[' + p + ']=' + o[t][p]; }).join(' ');
    }).join(' ');
  }
  function topicColour(topic) {
    var h = 0;
    for (var i = 0; i < topic.length; i++) h = (h * 31 + topic.charCodeAt(i)) >>> 0;
    return 'hsl(' + (h % 360) + ',55%,42%)';
  }
  function groupHref(g) {
    return fileData ? '#/groups/' + encodeURIComponent(g) : '/groups/' + encodeURIComponent(g);
  }
  function route() {
    var p = fileData ? location.hash.replace(/^#/, '') : location.pathname;
    if (p.indexOf('/groups/') === 0) return { view: 'group', group: decodeURIComponent(p.slice(8)) };
    return { view: 'list' };
  }
  function setStatus(s) { statusEl.textContent = s; }
  function rendered() {
    // kproxyFirstDraw is when the page first drew data, for the benchmarks.
    if (!renders) window.kproxyFirstDraw = performance.now();
    renders++;
    document.body.setAttribute('data-renders', String(renders));
  }

  // poll fetches url now and then again and again, handing onChange only
  // bodies that changed. It waits POLL_MS between fetches, or four times
  // what the last fetch and redraw took when that is longer, so that a
  // huge group does not keep the admin server and the page busy.
  function poll(url, onChange) {
    var last = null;
    function tick() {
      var started = performance.now();
      fetch(url, { cache: 'no-store' }).then(function (r) {
        if (!r.ok) throw new Error(url + ': ' + r.status);
        return r.text();
      }).then(function (text) {
        setStatus('live · updated ' + new Date().toLocaleTimeString());
        if (text !== last) { last = text; onChange(JSON.parse(text)); }
      }).catch(function (e) { setStatus('live · ' + e.message); })
        .then(function () { timer = setTimeout(tick, Math.max(POLL_MS, 4 * (performance.now() - started))); });
    }
    tick();
  }

  // ---- the group list ---------------------------------------------------

  var columns = [
    { key: 'group', title: 'group' },
    { key: 'groupProtocol', title: 'protocol' },
    { key: 'assignor', title: 'assignor' },
    { key: 'state', title: 'state' },
    { key: 'generation', title: 'generation', num: true },
    { key: 'members', title: 'members', num: true },
    { key: 'lastRebalance', title: 'last rebalance' },
    { key: 'lastTrigger', title: 'trigger' },
    { key: 'rebalancesLastHour', title: 'rebalances 1 h', num: true },
    { key: 'storm', title: 'storm' },
    { key: 'findings', title: 'findings', num: true },
    { key: 'suspectCommits', title: 'suspect commits', num: true },
    { key: 'failedCommits', title: 'failed commits', num: true }
  ];
  var list = { rows: [], sort: 'group', desc: false, filter: '' };

  function showList() {
    crumb.textContent = 'consumer groups';
    app.innerHTML = '<input class="filter" id="filter" placeholder="filter groups" autocomplete="off">' +
      '<table id="groups"><thead><tr>' + columns.map(function (c) {
        return '<th data-key="' + c.key + '">' + esc(c.title) + '</th>';
      }).join('') + '</tr></thead><tbody></tbody></table><div id="none" class="empty"></div>';
    var f = document.getElementById('filter');
    f.value = list.filter;
    f.addEventListener('input', function () { list.filter = f.value; drawList(); });
    app.querySelector('thead').addEventListener('click', function (e) {
      var key = e.target.getAttribute('data-key');
      if (!key) return;
      list.desc = list.sort === key ? !list.desc : false;
      list.sort = key;
      drawList();
    });
    if (fileData) { list.rows = fileData.summaries; drawList(); setStatus('report'); return; }
    poll('/api/groups', function (rows) { list.rows = rows; drawList(); });
  }

  // findingsCell is the list's findings count of row r, a badge coloured
  // by the worst severity; empty when the page has no diagnosis.
  function findingsCell(r) {
    if (r.findings == null) return '<td class="num findings"></td>';
    if (!r.findings) return '<td class="num findings" data-findings="0">0</td>';
    return '<td class="num findings" data-findings="' + r.findings + '" data-worst="' + esc(r.worstSeverity) + '"><span class="findings-badge ' + esc(r.worstSeverity) +
      '" title="' + r.findings + (r.findings === 1 ? ' finding' : ' findings') + ', the worst ' + esc(r.worstSeverity) + '">' + r.findings + '</span></td>';
  }

  // protocolCell is the list's protocol of row r: the group's, and while
  // its members use both protocols (an online migration), how many use
  // each.
  function protocolCell(r) {
    var mp = r.memberProtocols || {}, kinds = Object.keys(mp).sort();
    var text = r.groupProtocol;
    if (kinds.length > 1 || (kinds.length === 1 && kinds[0] !== r.groupProtocol && r.members)) {
      text += ' (' + kinds.map(function (k) { return mp[k] + ' ' + k; }).join(', ') + ')';
    }
    if (r.migration) text += ' · ' + r.migration + ' under way';
    return '<td class="protocol" data-migration="' + esc(r.migration || '') + '">' + esc(text) + '</td>';
  }

  function drawList() {
    var q = list.filter.toLowerCase();
    var rows = list.rows.filter(function (r) { return r.group.toLowerCase().indexOf(q) >= 0; });
    var key = list.sort, sign = list.desc ? -1 : 1;
    rows.sort(function (a, b) {
      var x = a[key], y = b[key];
      if (x === y) return a.group < b.group ? -1 : 1;
      if (x == null) return 1;
      if (y == null) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    var html = new Array(rows.length);
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      html[i] = '<tr data-group="' + esc(r.group) + '"><td><a href="' + esc(groupHref(r.group)) + '">' + esc(r.group) + '</a></td>' +
        protocolCell(r) + '<td>' + esc(r.assignor) + '</td><td>' + esc(r.state) + '</td>' +
        '<td class="num">' + r.generation + '</td><td class="num">' + r.members + '</td>' +
        '<td>' + (r.lastRebalance ? esc(clock(ms(r.lastRebalance))) : '') + '</td><td>' + esc(r.lastTrigger) + '</td>' +
        '<td class="num">' + r.rebalancesLastHour + '</td>' +
        '<td>' + (r.storm ? '<span class="storm-flag">storm</span>' : '') + '</td>' + findingsCell(r) +
        '<td class="num' + (r.suspectCommits ? ' bad' : '') + '">' + r.suspectCommits + '</td>' +
        '<td class="num' + (r.failedCommits ? ' bad' : '') + '">' + r.failedCommits + '</td></tr>';
    }
    app.querySelector('tbody').innerHTML = html.join('');
    app.querySelectorAll('th').forEach(function (th) {
      var k = th.getAttribute('data-key');
      th.className = k === list.sort ? 'sorted' + (list.desc ? ' desc' : '') : '';
    });
    document.getElementById('none').textContent = rows.length ? '' :
      (list.rows.length ? 'no group matches the filter' : 'no consumer group seen yet');
    rendered();
  }

  // ---- a group's timeline ---------------------------------------------

  var LABEL_W = 230, AXIS_H = 22, BAND_H = 36, LANE_H = 30;
  var view = { g: null, model: null, v0: null, v1: null, zoomed: false, selected: null };

  // laneOf returns the lane of member id in model m, adding it in order of
  // first appearance.
  function laneOf(m, id, clientId, instanceId) {
    var l = m.byId[id];
    if (!l) {
      l = { id: id, clientId: clientId || '', instanceId: instanceId || '', items: [] };
      m.byId[id] = l;
      m.lanes.push(l);
    }
    if (!l.clientId && clientId) l.clientId = clientId;
    if (!l.instanceId && instanceId) l.instanceId = instanceId;
    return l;
  }

  // index maps the member ids of gen[field] (members or departed) to the
  // entries, once per generation.
  function index(gen, field) {
    var key = '_by_' + field;
    if (!gen[key]) {
      var o = Object.create(null);
      (gen[field] || []).forEach(function (x) { o[x.memberId] = x; });
      Object.defineProperty(gen, key, { value: o, enumerable: false });
    }
    return gen[key];
  }

  // model turns a GroupReport into lanes of timed items, bands and storms.
  function model(g) {
    var m = { lanes: [], byId: {}, bands: [], storms: [], t0: ms(g.firstSeen), t1: ms(g.lastSeen) };
    var gens = g.generations || [];
    function widen(t) {
      if (t == null) return;
      if (m.t0 == null || t < m.t0) m.t0 = t;
      if (m.t1 == null || t > m.t1) m.t1 = t;
    }
    gens.forEach(function (gen) { widen(ms(gen.startedAt)); widen(ms(gen.stableAt)); });

    gens.forEach(function (gen, i) {
      var next = gens[i + 1];
      var start = ms(gen.startedAt), joined = ms(gen.joinCompletedAt), stable = ms(gen.stableAt);
      var bandFrom = start != null ? start : (joined != null ? joined : stable);
      var bandTo = stable != null ? stable : (next && ms(next.startedAt) != null ? ms(next.startedAt) : m.t1);
      if (bandFrom != null) {
        m.bands.push({ gen: gen, from: bandFrom, to: Math.max(bandTo, bandFrom) });
      }
      if (!epochGen(gen)) {
        (gen.members || []).forEach(function (mem) {
          var lane = laneOf(m, mem.memberId, mem.clientId, mem.instanceId);
          var j = ms(mem.joinedAt), synced = ms(mem.syncedAt);
          var joinEnd = j != null && mem.joinWaitMs != null ? j + mem.joinWaitMs : joined;
          if (j != null && joinEnd != null) {
            lane.items.push({ kind: 'joinwait', gen: gen.generation, from: j, to: joinEnd,
              title: 'gen ' + gen.generation + ' JoinGroup wait ' + dur(mem.joinWaitMs) });
          }
          if (joinEnd != null && synced != null) {
            lane.items.push({ kind: 'syncwait', gen: gen.generation, from: joinEnd, to: synced,
              title: 'gen ' + gen.generation + ' SyncGroup wait ' + dur(synced - joinEnd) });
          }
          var from = synced != null ? synced : (stable != null ? stable : joined);
          if (from == null || mem.assignment == null) return;
          var to = m.t1, revoked = null, nm = null;
          if (next) {
            nm = index(next, 'members')[mem.memberId];
            var dep = index(next, 'departed')[mem.memberId];
            to = ms(next.startedAt);
            if (nm && ms(nm.joinedAt) != null && !epochGen(next)) to = ms(nm.joinedAt); // a group epoch's joinedAt is the member's first join
            else if (dep && ms(dep.at) != null) to = ms(dep.at);
            if (to == null) to = ms(next.joinCompletedAt);
            revoked = nm ? nm.revoked : (dep ? dep.partitions : null);
          }
          if (to == null || to < from) to = from;
          Object.keys(mem.assignment).sort().forEach(function (topic, k, all) {
            lane.items.push({ kind: 'owned', gen: gen.generation, from: from, to: to, topic: topic, row: k, rows: all.length,
              partitions: topic + '[' + mem.assignment[topic].join(' ') + ']', label: '[' + mem.assignment[topic].join(' ') + ']',
              title: 'gen ' + gen.generation + ' owns ' + topic + ' ' + mem.assignment[topic].join(', ') });
          });
          if (next && Object.keys(mem.assignment).length) {
            lane.items.push({ kind: 'revoke', gen: next.generation, at: to,
              title: 'gen ' + next.generation + ' rebalance: ' + (gen.mode === 'eager' ? 'revoked everything; lost ' : 'revoked ') + parts(revoked) });
          }
        });
      }
      (gen.commitsDuringRevocation || []).forEach(function (c) { addCommit(m, c, gen.generation); });
      (gen.suspectCommits || []).forEach(function (s) {
        laneOf(m, s.memberId).items.push({ kind: 'suspect', at: ms(s.at), gen: gen.generation,
          title: 'suspect commit ' + s.topic + '[' + s.partition + ']=' + s.offset + ' (' + s.reasons.join(', ') + ')' +
            (s.committedOffset != null ? '; last commit ' + s.committedOffset + ' by ' + s.committedBy : '') + (s.owner ? '; owner ' + s.owner : '') });
      });
      (gen.departed || []).forEach(function (d) {
        var at = ms(d.at) != null ? ms(d.at) : start;
        if (at == null) return;
        laneOf(m, d.memberId, '', d.instanceId).items.push({ kind: 'leave', at: at, gen: gen.generation, label: d.how,
          title: d.how.replace(/_/g, ' ') + (d.reason ? ': ' + d.reason : '') + '; owned ' + parts(d.partitions) });
      });
    });
    if (g.pendingRebalance) {
      var p = g.pendingRebalance;
      if (ms(p.startedAt) != null) m.bands.push({ pending: p, from: ms(p.startedAt), to: m.t1 });
      (p.commitsDuringRevocation || []).forEach(function (c) { addCommit(m, c, p.generation); });
      var tr = p.trigger;
      if ((tr.kind === 'member_left' || tr.kind === 'session_timeout') && tr.member && ms(tr.at) != null) {
        laneOf(m, tr.member).items.push({ kind: 'leave', at: ms(tr.at), gen: p.generation, label: tr.kind === 'member_left' ? 'left' : 'session_timeout',
          title: tr.kind.replace(/_/g, ' ') + (tr.reason ? ': ' + tr.reason : '') });
      }
    }
    (g.consumerMembers || []).forEach(function (cm) {
      var lane = laneOf(m, cm.memberId, cm.clientId, cm.instanceId);
      var eps = cm.epochs || [];
      eps.forEach(function (ep, i) {
        var from = ms(ep.at), nextEp = eps[i + 1];
        var to = nextEp ? ms(nextEp.at) : (ms(cm.leftAt) != null ? ms(cm.leftAt) : m.t1);
        var a = ep.assignment || {};
        var topics = Object.keys(a).sort();
        if (!topics.length) topics = [''];
        topics.forEach(function (topic, k) {
          lane.items.push({ kind: 'owned', gen: ep.epoch, epoch: ep.epoch, from: from, to: Math.max(to, from), topic: topic, row: k, rows: topics.length,
            partitions: topic ? topic + '[' + a[topic].join(' ') + ']' : 'nothing', label: 'e' + ep.epoch + (topic ? ' [' + a[topic].join(' ') + ']' : ''),
            title: 'epoch ' + ep.epoch + ' owns ' + parts(a) + '; added ' + parts(ep.added) + ', revoked ' + parts(ep.revoked) });
        });
      });
      (cm.fences || []).forEach(function (f) {
        lane.items.push({ kind: 'leave', at: ms(f.at), label: 'fenced', title: 'fenced at epoch ' + f.epoch + ': ' + f.error });
      });
      if (ms(cm.leftAt) != null) lane.items.push({ kind: 'leave', at: ms(cm.leftAt), label: 'left', title: 'left the group' });
    });
    if (g.streams) streamsLanes(m, g.streams);
    (g.requestErrors || []).forEach(function (e) {
      if (!e.memberId || ms(e.at) == null) return;
      laneOf(m, e.memberId).items.push({ kind: 'reqerror', at: ms(e.at), gen: e.generation, api: e.api,
        title: e.api + ' failed: ' + e.error + ' (' + clock(ms(e.at)) + ')\n' + e.text });
    });
    (g.findings || []).forEach(function (f, i) {
      var at = ms(f.at);
      if (at == null) return;
      (f.members || []).forEach(function (mem) {
        laneOf(m, mem.memberId, mem.clientId, mem.instanceId).items.push({ kind: 'finding', at: at, fkind: f.kind, severity: f.severity, findex: i,
          title: f.severity + ' · ' + f.kind + ' (' + clock(at) + ')\n' + f.explanation });
      });
    });
    (g.storms || []).forEach(function (s) {
      m.storms.push({ from: ms(s.from), to: s.endedAt ? ms(s.endedAt) : (s.ongoing ? m.t1 : ms(s.to)), storm: s });
    });
    m.lanes.forEach(function (l) { l.items.forEach(function (it) { widen(it.at); widen(it.from); widen(it.to); }); });
    if (m.t0 == null) { m.t0 = 0; m.t1 = 1; }
    if (m.t1 <= m.t0) m.t1 = m.t0 + 1000;
    return m;
  }

  // streamsLanes adds a KIP-1071 streams group's members (g.streams) to m:
  // a lane each, one row per kind of task (active, standby, warm-up) held
  // from each step of its lane to the next.
  function streamsLanes(m, st) {
    var kinds = [['active', 'active'], ['standby', 'standby'], ['warmup', 'warm-up']];
    var colours = { active: '#2563eb', standby: '#64748b', 'warm-up': '#d97706' };
    (st.members || []).forEach(function (sm) {
      var lane = laneOf(m, sm.memberId, sm.clientId, sm.instanceId);
      var steps = sm.lane || [];
      steps.forEach(function (step, i) {
        var from = ms(step.at), next = steps[i + 1];
        var to = next ? ms(next.at) : (ms(sm.leftAt) != null ? ms(sm.leftAt) : m.t1);
        var rows = kinds.filter(function (k) { return (step[k[0]] || []).length; });
        var all = kinds.map(function (k) { return k[1] + ' ' + ((step[k[0]] || []).join(' ') || 'none'); }).join(', ');
        if (!rows.length) rows = [['', 'nothing']];
        rows.forEach(function (k, r) {
          var tasks = k[0] ? step[k[0]].join(' ') : '';
          lane.items.push({ kind: 'owned', gen: step.epoch, epoch: step.epoch, from: from, to: Math.max(to, from), topic: k[0] ? k[1] : '', colour: colours[k[1]], row: r, rows: rows.length,
            partitions: k[0] ? k[1] + '[' + tasks + ']' : 'nothing', label: 'e' + step.epoch + (k[0] ? ' ' + k[1] + ' ' + tasks : ''),
            title: 'epoch ' + step.epoch + ': ' + all });
        });
      });
      (sm.fences || []).forEach(function (f) {
        lane.items.push({ kind: 'leave', at: ms(f.at), label: 'fenced', title: 'fenced at epoch ' + f.epoch + ': ' + f.error });
      });
      if (ms(sm.leftAt) != null && sm.status === 'left') lane.items.push({ kind: 'leave', at: ms(sm.leftAt), label: 'left', title: 'left the group' });
    });
  }

  // streamsTables renders a streams group's story (g.streams): its members
  // with their tasks, the epochs with the tasks each moved, the statuses
  // the coordinator raised and the warm-ups.
  function streamsTables(st, who) {
    function list(a) { return esc((a || []).join(' ') || 'none'); }
    var h = '<h2 id="streams-title">Streams group · epoch ' + st.groupEpoch +
      (st.assignmentEpoch != null ? ' · assignment epoch ' + st.assignmentEpoch + ' · ' + esc(st.state) : '') +
      (st.topologyEpoch != null ? ' · topology epoch ' + st.topologyEpoch : '') + '</h2>';
    h += '<div class="meta">' + (st.subtopologies || []).map(function (s) {
      return 'subtopology ' + esc(s.id) + ' reads ' + list((s.sourceTopics || []).concat(s.repartitionSourceTopics || [], s.sourceTopicRegex || [])) +
        ((s.stateChangelogTopics || []).length ? ', changelogs ' + list(s.stateChangelogTopics) : '');
    }).join(' · ') + (st.acceptableRecoveryLag != null ? ' · acceptable recovery lag ' + st.acceptableRecoveryLag : '') + '</div>';
    h += '<table id="streams-members"><thead><tr><th>member</th><th>status</th><th>epoch</th><th>active</th><th>standby</th><th>warm-up</th>' +
      '<th>target</th><th>process</th><th>endpoint</th><th>topology</th></tr></thead><tbody>' + (st.members || []).map(function (sm) {
        var t = sm.target;
        return '<tr data-member="' + esc(sm.memberId) + '"><td>' + who(sm.memberId) + '</td><td class="' + (sm.status === 'active' || sm.status === 'left' ? '' : 'bad') + '">' +
          esc(sm.status) + '</td><td>' + sm.memberEpoch + '</td><td>' + list(sm.tasks.active) + '</td><td>' + list(sm.tasks.standby) + '</td><td>' +
          list(sm.tasks.warmup) + '</td><td>' + (t ? 'active ' + list(t.active) + ', standby ' + list(t.standby) + ', warm-up ' + list(t.warmup) : '-') +
          '</td><td>' + esc(sm.processId) + '</td><td>' + esc(sm.userEndpoint || '-') + '</td><td>' + sm.topologyEpoch + '</td></tr>';
      }).join('') + '</tbody></table>';
    h += '<h2>Epochs and task movements</h2><table id="streams-epochs"><thead><tr><th>epoch</th><th>time</th><th>trigger</th><th>moves</th></tr></thead><tbody>' +
      (st.epochs || []).map(function (e) {
        var moves = (e.moves || []).map(function (mv) {
          var kind = mv.kind === 'warmup' ? 'warm-up' : mv.kind;
          return esc(mv.task) + ' ' + kind + ' ' + (mv.from ? who(mv.from) + ' → ' : '') + who(mv.to) +
            (mv.promoted ? ' (' + (mv.promoted === 'warmup' ? 'warm-up' : mv.promoted) + ' promoted)' : '');
        });
        return '<tr data-epoch="' + e.epoch + '"><td>' + e.epoch + '</td><td>' + clock(ms(e.at)) + '</td><td>' + esc(e.trigger.kind.replace(/_/g, ' ')) +
          (e.trigger.member ? ' ' + who(e.trigger.member) : '') + (e.reconcileMs != null ? ' · reconciled in ' + dur(e.reconcileMs) : '') + '</td><td class="moves">' + (moves.join('<br>') || '-') + '</td></tr>';
      }).join('') + '</tbody></table>';
    if ((st.statuses || []).length) {
      h += '<h2>Statuses</h2><table id="streams-statuses"><thead><tr><th>status</th><th>raised</th><th>by</th><th>cleared</th><th>detail</th></tr></thead><tbody>' +
        st.statuses.map(function (x) {
          return '<tr><td class="' + (x.clearedAt ? '' : 'bad') + '">' + esc(x.name) + '</td><td>' + clock(ms(x.raisedAt)) + '</td><td>' + who(x.memberId) + '</td><td>' +
            (x.clearedAt ? clock(ms(x.clearedAt)) : 'still raised') + '</td><td>' + esc(x.detail) + '</td></tr>';
        }).join('') + '</tbody></table>';
    }
    if ((st.warmups || []).length) {
      h += '<h2>Warm-ups</h2><table id="streams-warmups"><thead><tr><th>task</th><th>member</th><th>from</th><th>outcome</th><th>warming</th><th>lag</th></tr></thead><tbody>' +
        st.warmups.map(function (w) {
          var outcome = w.promotedAt ? 'promoted ' + clock(ms(w.promotedAt)) : (w.endedAt ? 'ended unpromoted ' + clock(ms(w.endedAt)) : 'still warming up');
          return '<tr><td>' + esc(w.task) + '</td><td>' + who(w.memberId) + '</td><td>' + clock(ms(w.assignedAt)) + '</td><td class="' + (w.promotedAt ? '' : 'bad') + '">' +
            outcome + '</td><td>' + dur(w.warmingMs) + '</td><td>' + (w.lag == null ? '-' : w.lag) + '</td></tr>';
        }).join('') + '</tbody></table>';
    }
    if ((st.unassignedTasks || []).length) h += '<div class="meta bad" id="streams-unassigned">tasks active on no live member: ' + list(st.unassignedTasks) + '</div>';
    return h;
  }

  function addCommit(m, c, gen) {
    var lane = laneOf(m, c.memberId);
    var errs = c.errors ? ' errors ' + offsets(c.errors) : '';
    lane.items.push({ kind: 'commit', result: c.failed ? 'failed' : c.result, at: ms(c.at), gen: gen,
      title: 'commit during revocation (gen ' + c.generation + ') ' + offsets(c.offsets) + ' ' + c.result + errs +
        (c.latencyMs != null ? ' (' + dur(c.latencyMs) + ')' : '') + txnText(c.transaction) });
  }

  // txnText is a transactional commit's transaction and its outcome, '' for
  // an OffsetCommit.
  function txnText(t) {
    if (!t) return '';
    return '; transaction ' + t.transactionalId + ' (producer ' + t.producerId + ' epoch ' + t.producerEpoch + ') ' + t.outcome +
      (t.outcome === 'aborted' ? ': offsets discarded' : t.outcome === 'pending' ? ': no EndTxn seen' : '');
  }

  function laneLabel(l) {
    if (l.instanceId) return { main: l.instanceId + ' (static)', sub: l.clientId + ' ' + l.id };
    return { main: l.clientId || l.id, sub: l.id };
  }

  function showGroup(id) {
    crumb.innerHTML = '<a href="' + (fileData ? '#/' : '/') + '">groups</a> / ' + esc(id);
    app.innerHTML = '<h1 id="title"></h1><div class="meta" id="meta"></div>' +
      '<div class="toolbar"><button id="zin" title="zoom in">+</button><button id="zout" title="zoom out">&minus;</button>' +
      '<button id="zreset">whole timeline</button><span class="legend">' +
      '<span><i style="background:#fde68a"></i>JoinGroup wait</span><span><i style="background:#bae6fd"></i>SyncGroup wait</span>' +
      '<span><i style="background:#7c3aed"></i>revocation</span><span><i style="background:#16a34a"></i>commit ok</span>' +
      '<span><i style="background:#dc2626"></i>commit failed</span><span><i style="background:#f97316"></i>suspect commit</span>' +
      '<span><i style="background:#be123c"></i>request error (&times;)</span><span><i style="background:#111827"></i>left / evicted</span><span><i style="background:rgba(239,68,68,.25)"></i>storm</span><span><i class="finding-key"></i>finding</span>' +
      '</span></div><div id="chart"></div><div id="findings"></div><div id="details"></div>';
    view = { g: null, model: null, v0: null, v1: null, zoomed: false, selected: null };
    wireChart();
    if (fileData) {
      var g = fileData.groups.find(function (x) { return x.group === id; });
      if (!g) { app.innerHTML = '<div class="empty">no group ' + esc(id) + ' in this report</div>'; rendered(); return; }
      setStatus('report');
      update(g);
      return;
    }
    poll('/api/groups/' + encodeURIComponent(id), update);
  }

  function update(g) {
    view.g = g;
    view.model = model(g);
    if (!view.zoomed) { view.v0 = view.model.t0; view.v1 = view.model.t1; }
    var gens = g.generations || [];
    var last = gens[gens.length - 1];
    document.getElementById('title').textContent = g.group;
    document.getElementById('meta').textContent = g.groupProtocol + ' group' +
      (g.protocolType ? ' (' + g.protocolType + ')' : '') +
      (g.streams ? ' · group epoch ' + g.streams.groupEpoch + ', ' + g.streams.members.filter(function (sm) { return sm.status === 'active'; }).length + ' active members' : ' · ' + gens.length + ' generations') +
      (last ? ' · generation ' + last.generation + ' ' + last.status + ', ' + (last.members || []).length + ' members, ' + last.protocol : '') +
      (g.pendingRebalance ? ' · rebalancing' : '') +
      ' · seen ' + clock(ms(g.firstSeen)) + ' – ' + clock(ms(g.lastSeen)) + ' UTC' +
      (g.historyFrom ? ' · history whole from ' + g.historyFrom.slice(0, 19).replace('T', ' ') + ' UTC (older generations were dropped from memory)' : '');
    draw();
    findingsPanel();
    details();
  }

  // migrationsText tells the group's online migrations between the
  // classic and the consumer protocol, one sentence each.
  function migrationsText(g) {
    return (g.migrations || []).map(function (mg) {
      var up = mg.direction === 'upgrade';
      var t = (up ? 'online upgrade to the consumer protocol' : 'online downgrade to the classic protocol') +
        ', started ' + clock(ms(mg.startedAt));
      if (mg.convertedAt) t += ', group type changed ' + clock(ms(mg.convertedAt)) + ' at generation ' + mg.generation;
      if (!mg.completedAt) t += ', under way';
      else t += ', complete ' + clock(ms(mg.completedAt)) + (mg.lastMember ? ' (last ' + (up ? 'classic' : 'consumer-protocol') + ' member ' + mg.lastMember + ' gone)' : '');
      return t;
    });
  }

  // findingsPanel lists the group's findings (g.findings: absent when the
  // page has no diagnosis), most recent last, as the diagnosis sorts them.
  function findingsPanel() {
    var el = document.getElementById('findings'), g = view.g, fs = g.findings;
    if (!fs) { el.innerHTML = ''; return; }
    var lanes = view.model.byId;
    // who names a finding's member as a person looks for it: its lane's
    // label, then each fact known of it (client id, instance id, address,
    // client software, rack, TLS client certificate, member id), one a line.
    function who(mem) {
      var l = lanes[mem.memberId];
      var facts = [['clientId', 'client ', mem.clientId], ['instanceId', 'instance ', mem.instanceId], ['clientAddr', '', mem.clientAddr],
        ['software', '', [mem.clientSoftwareName, mem.clientSoftwareVersion].filter(Boolean).join(' ')], ['rack', 'rack ', mem.rack],
        ['cert', 'cert ', mem.clientCertSubject], ['memberId', 'member ', mem.memberId]];
      return '<div class="member" data-member="' + esc(mem.memberId) + '"><div class="who">' + esc(l ? laneLabel(l).main : (mem.clientId || mem.memberId)) + '</div>' +
        facts.filter(function (f) { return f[2]; }).map(function (f) {
          return '<div class="ident" data-field="' + f[0] + '">' + esc(f[1] + f[2]) + '</div>';
        }).join('') + '</div>';
    }
    var h = '<h2 id="findings-title">Findings (' + fs.length + ')</h2>';
    if (!fs.length) { el.innerHTML = h + '<div class="empty">the diagnosis found nothing in this group</div>'; return; }
    h += '<table id="findings-table"><thead><tr><th>severity</th><th>time</th><th>kind</th><th>members</th><th>explanation and suggestion</th><th>evidence</th></tr></thead><tbody>';
    fs.forEach(function (f, i) {
      var ev = f.evidence || {};
      var evRows = Object.keys(ev).sort().map(function (k) {
        var v = ev[k];
        return '<tr><td>' + esc(k) + '</td><td>' + esc(typeof v === 'object' ? JSON.stringify(v) : v) + '</td></tr>';
      }).join('');
      h += '<tr class="finding ' + esc(f.severity) + '" data-finding="' + i + '" data-kind="' + esc(f.kind) + '" data-id="' + esc(f.id) + '">' +
        '<td class="sev">' + esc(f.severity) + '</td><td>' + clock(ms(f.at)) + '</td><td>' + esc(f.kind) + '</td>' +
        '<td class="members">' + (f.members || []).map(who).join('') + '</td>' +
        '<td class="explain"><div>' + esc(f.explanation) + '</div>' + (f.suggestion ? '<div class="suggest">' + esc(f.suggestion) + '</div>' : '') + '</td>' +
        '<td>' + (evRows ? '<table class="evidence"><tbody>' + evRows + '</tbody></table>' : '') + '</td></tr>';
    });
    el.innerHTML = h + '</tbody></table>';
  }

  // x is the horizontal pixel of time t in the current view; draw sets
  // plotW first.
  var plotW = 1000;
  function x(t) {
    return LABEL_W + (t - view.v0) / (view.v1 - view.v0) * plotW;
  }
  function chartWidth() { return Math.max(600, document.getElementById('chart').clientWidth || 1000); }

  function ticks(v0, v1, n) {
    var span = (v1 - v0) / n, steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000, 7200000, 21600000, 86400000];
    var step = steps.find(function (s) { return s >= span; }) || steps[steps.length - 1];
    var out = [];
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) out.push(t);
    return out;
  }

  function draw() {
    var m = view.model;
    if (!m) return;
    var name = function (id) { return !id ? '-' : (m.byId[id] ? laneLabel(m.byId[id]).main : id); };
    var W = chartWidth(), H = AXIS_H + BAND_H + m.lanes.length * LANE_H + 4;
    plotW = W - LABEL_W - 10;
    var v0 = view.v0, v1 = view.v1;
    var vis = function (a, b) { return b >= v0 && a <= v1; };
    var s = [];
    s.push('<svg xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + H + '">');
    s.push('<defs><clipPath id="plot"><rect x="' + LABEL_W + '" y="0" width="' + (W - LABEL_W) + '" height="' + H + '"/></clipPath></defs>');
    s.push('<g class="axis">');
    ticks(v0, v1, 8).forEach(function (t) {
      var px = x(t);
      s.push('<line x1="' + px + '" x2="' + px + '" y1="' + AXIS_H + '" y2="' + H + '"/><text x="' + (px + 2) + '" y="14">' + clock(t) + '</text>');
    });
    s.push('</g>');
    m.lanes.forEach(function (l, i) {
      var y = AXIS_H + BAND_H + i * LANE_H, lab = laneLabel(l);
      if (i % 2 === 0) s.push('<rect class="lane-bg" x="0" y="' + y + '" width="' + W + '" height="' + LANE_H + '"/>');
      s.push('<text class="lane-label" x="6" y="' + (y + 13) + '">' + esc(lab.main.slice(0, 34)) + '<title>' + esc(lab.main) + '</title></text>');
      s.push('<text class="lane-sub" x="6" y="' + (y + 25) + '">' + esc(lab.sub.slice(0, 34)) + '<title>' + esc(lab.sub) + '</title></text>');
    });
    s.push('<g clip-path="url(#plot)">');
    m.storms.forEach(function (st) {
      if (!vis(st.from, st.to)) return;
      s.push('<rect class="storm" x="' + x(st.from) + '" y="' + AXIS_H + '" width="' + Math.max(2, x(st.to) - x(st.from)) + '" height="' + (H - AXIS_H) +
        '"><title>storm: ' + st.storm.rebalances + ' rebalances, mostly ' + esc(st.storm.dominantTrigger) + '</title></rect>');
    });
    var bandEnd = -Infinity;
    m.bands.forEach(function (b) {
      if (!vis(b.from, b.to)) return;
      var gen = b.gen, x0 = x(b.from), w = Math.max(3, x(b.to) - x0);
      // Bands closer than a few pixels hide each other: draw the first;
      // zooming in shows the others.
      if (x0 < bandEnd + 2) return;
      bandEnd = x0 + w;
      var num = gen ? gen.generation : b.pending.generation;
      var trig = gen ? gen.trigger : b.pending.trigger;
      var k848 = gen ? epochGen(gen) : epochs(view.g);
      var label = (k848 ? 'epoch ' : 'gen ') + num + ' ' + trig.kind + (gen ? ' · ' + (k848 ? 'reconcile ' + dur(gen.reconcileMs) : 'stw ' + dur(gen.stopTheWorldMs)) : ' · pending');
      var title = gen ? 'generation ' + num + ' (' + gen.status + '): ' + trig.kind + (trig.member ? ' ' + trig.member : '') + (trig.reason ? ' (' + trig.reason + ')' : '') +
        '\nstop-the-world ' + dur(gen.stopTheWorldMs) + ' (join ' + dur(gen.joinMs) + ', sync ' + dur(gen.syncMs) + ')' +
        '\nwaited for ' + name(gen.waitedFor) + '\nleader ' + name(gen.leader) + '\nassignor ' + gen.protocol + ' (' + gen.mode + ')'
        : 'rebalance to generation ' + num + ' in progress: ' + trig.kind;
      s.push('<g class="band' + (view.selected === num ? ' selected' : '') + '" data-gen="' + num + '"><rect x="' + x0 + '" y="' + (AXIS_H + 2) + '" width="' + w +
        '" height="' + (BAND_H - 4) + '"><title>' + esc(title) + '</title></rect>');
      if (w > 40) {
        s.push('<text x="' + (x0 + 3) + '" y="' + (AXIS_H + 14) + '">' + esc(label.slice(0, Math.floor(w / 6))) + '</text>');
        if (gen && w > 120) {
          s.push('<text x="' + (x0 + 3) + '" y="' + (AXIS_H + 27) + '">' + esc(('waited for ' + name(gen.waitedFor) + ' · leader ' + name(gen.leader) + ' · ' + gen.protocol).slice(0, Math.floor(w / 6))) + '</text>');
        }
      }
      s.push('</g>');
    });
    m.lanes.forEach(function (l, i) {
      var y = AXIS_H + BAND_H + i * LANE_H, mid = y + LANE_H / 2;
      s.push('<g class="lane" data-member="' + esc(l.id) + '" data-client="' + esc(l.clientId) + '" data-instance="' + esc(l.instanceId) + '">');
      // Level of detail: a marker within 2 px of the last one of its kind
      // is not drawn, and narrow adjacent ownership segments of one topic
      // are drawn as one, so that a long history costs about as many
      // elements as the chart has pixels. Failed and suspect commits and
      // departures are always drawn.
      var last = {}, pending = {}, dense = { joinwait: [], syncwait: [], revoke: [], commit: [] };
      // A kind whose marks in view are on average closer than 12 px goes
      // into its path whole: no element per mark at all.
      var count = { joinwait: 0, syncwait: 0, revoke: 0, commit: 0 }, allDense = {};
      l.items.forEach(function (it) {
        if (count[it.kind] != null && (it.at != null ? vis(it.at, it.at) : vis(it.from, it.to))) count[it.kind]++;
      });
      Object.keys(count).forEach(function (k) { allDense[k] = count[k] > plotW / 12; });
      function flush(row) {
        var p = pending[row];
        if (!p) return;
        delete pending[row];
        var w = Math.max(1, p.x1 - p.x0), it = p.it;
        var title = p.n > 1 ? 'generations ' + it.gen + '–' + p.lastGen + ' (' + p.n + '): owns ' + it.topic + '; zoom in for each' : it.title;
        s.push('<g class="owned-seg" data-gen="' + it.gen + '" data-partitions="' + (p.n > 1 ? '' : esc(it.partitions)) + '"' + (p.n > 1 ? ' data-merged="' + p.n + '"' : '') +
          (it.epoch != null ? ' data-epoch="' + it.epoch + '"' : '') +
          '><rect class="owned" x="' + p.x0 + '" y="' + p.y + '" width="' + w + '" height="' + p.h + '" fill="' + (it.colour || (it.topic ? topicColour(it.topic) : '#d1d5db')) + '"><title>' + esc(title) + '</title></rect>');
        if (p.n === 1 && w > it.label.length * 6 + 6 && p.h >= 10) s.push('<text class="owned-label" x="' + (Math.max(p.x0, LABEL_W) + 3) + '" y="' + (p.y + p.h / 2 + 4) + '">' + esc(it.label) + '</text>');
        s.push('</g>');
      }
      l.items.forEach(function (it) {
        if (it.at != null ? !vis(it.at, it.at) : !vis(it.from, it.to)) return;
        var dedupe = it.kind === 'joinwait' || it.kind === 'syncwait' || it.kind === 'revoke' || (it.kind === 'commit' && it.result === 'ok');
        if (dedupe) {
          // Within 6 px of the last one drawn: one path per lane and kind
          // holds them all (one element instead of thousands).
          var px = x(it.at != null ? it.at : it.from);
          if (allDense[it.kind] || px < (last[it.kind] == null ? -Infinity : last[it.kind]) + 6) {
            var d = dense[it.kind];
            if (it.kind === 'revoke') d.push('M' + px.toFixed(1) + ' ' + (y + 2) + 'V' + (y + LANE_H - 2));
            else if (it.kind === 'commit') d.push('M' + (px - 2).toFixed(1) + ' ' + (mid - 2) + 'h4v4h-4Z');
            else d.push('M' + px.toFixed(1) + ' ' + (y + 4) + 'h' + Math.max(0.5, x(it.to) - px).toFixed(1) + 'v' + (LANE_H - 8) + 'h' + (-Math.max(0.5, x(it.to) - px)).toFixed(1) + 'Z');
            return;
          }
          last[it.kind] = px;
        }
        var t = '<title>' + esc(it.title) + '</title>';
        switch (it.kind) {
          case 'joinwait':
          case 'syncwait':
            s.push('<rect class="' + it.kind + '" data-gen="' + it.gen + '" x="' + x(it.from) + '" y="' + (y + 4) + '" width="' + Math.max(1, x(it.to) - x(it.from)) + '" height="' + (LANE_H - 8) + '">' + t + '</rect>');
            break;
          case 'owned':
            var h = (LANE_H - 10) / it.rows, x0 = x(it.from), x1 = x(it.to), p = pending[it.row];
            if (p && p.it.topic === it.topic && x0 <= p.x1 + 1.5 && x1 - x0 < 4 && p.x1 - p.x0 < 40) {
              p.x1 = Math.max(p.x1, x1);
              p.n++;
              p.lastGen = it.gen;
              break;
            }
            flush(it.row);
            pending[it.row] = { it: it, x0: x0, x1: x1, y: y + 5 + it.row * h, h: h, n: 1, lastGen: it.gen };
            break;
          case 'revoke':
            s.push('<line class="revoke" data-gen="' + it.gen + '" x1="' + x(it.at) + '" x2="' + x(it.at) + '" y1="' + (y + 2) + '" y2="' + (y + LANE_H - 2) + '">' + t + '</line>');
            break;
          case 'commit':
            s.push('<circle class="commit ' + esc(it.result) + '" data-gen="' + it.gen + '" cx="' + x(it.at) + '" cy="' + mid + '" r="' + (it.result === 'ok' ? 5 : 7) + '">' + t + '</circle>');
            break;
          case 'suspect':
            var sx = x(it.at);
            s.push('<path class="suspect" data-gen="' + it.gen + '" d="M' + sx + ' ' + (mid - 8) + 'L' + (sx + 7) + ' ' + (mid + 6) + 'L' + (sx - 7) + ' ' + (mid + 6) + 'Z">' + t + '</path>');
            break;
          case 'reqerror':
            var ex = x(it.at), ey = y + 6;
            s.push('<path class="reqerror" data-api="' + esc(it.api) + '" d="M' + (ex - 4) + ' ' + (ey - 4) + 'L' + (ex + 4) + ' ' + (ey + 4) + 'M' + (ex + 4) + ' ' + (ey - 4) + 'L' + (ex - 4) + ' ' + (ey + 4) + '">' + t + '</path>');
            break;
          case 'finding':
            var fx = x(it.at), fy = y + LANE_H - 7;
            s.push('<path class="finding-mark ' + esc(it.severity) + '" data-kind="' + esc(it.fkind) + '" data-severity="' + esc(it.severity) + '" data-finding="' + it.findex +
              '" d="M' + fx + ' ' + (fy - 6) + 'L' + (fx + 6) + ' ' + fy + 'L' + fx + ' ' + (fy + 6) + 'L' + (fx - 6) + ' ' + fy + 'Z">' + t + '</path>');
            break;
          case 'leave':
            var lx = x(it.at);
            s.push('<g class="leave-mark" data-how="' + esc(it.label) + '"><rect class="leave" x="' + (lx - 4) + '" y="' + (mid - 4) + '" width="8" height="8" transform="rotate(45 ' + lx + ' ' + mid + ')">' + t + '</rect>' +
              '<text class="leave-label" x="' + (lx + 7) + '" y="' + (mid + 4) + '">' + esc(it.label.replace(/_/g, ' ')) + '</text></g>');
            break;
        }
      });
      Object.keys(pending).forEach(flush);
      Object.keys(dense).forEach(function (k) {
        if (!dense[k].length) return;
        s.push('<path class="' + (k === 'commit' ? 'commit ok' : k) + ' dense" d="' + dense[k].join('') + '"><title>' + dense[k].length +
          ' more ' + k + ' marks close together: zoom in to tell them apart</title></path>');
      });
      s.push('</g>');
    });
    s.push('</g></svg>');
    var chart = document.getElementById('chart');
    chart.innerHTML = s.join('');
    chart.setAttribute('data-view', v0 + ' ' + v1); // the time span shown, epoch ms
    rendered();
  }

  // epochs reports whether the group's generations are group epochs whose
  // members reconcile one by one: KIP-848 consumer groups and KIP-932
  // share groups.
  function epochs(g) { return g.groupProtocol === 'consumer' || g.groupProtocol === 'share'; }

  // epochGen reports whether gen is a group epoch (KIP-848 or KIP-932):
  // a group migrated online has classic generations and group epochs.
  function epochGen(gen) { return gen.mode === 'consumer' || gen.mode === 'share'; }

  // shareTables renders a share group's records (g.share): counts per
  // member, then the records delivered again after their holder let them go.
  function shareTables(sh, who) {
    function counts(c) {
      return '<td>' + c.acquired + '</td><td>' + c.redelivered + '</td><td>' + c.accepted + '</td><td>' + c.released + '</td><td>' +
        c.rejected + '</td><td class="' + (c.acknowledgeFailed ? 'bad' : '') + '">' + c.acknowledgeFailed + '</td><td>' + c.unacknowledged + '</td>';
    }
    var h = '<h2 id="share-title">Share records · acquisition lock ' + dur(sh.acquisitionLockTimeoutMs) + '</h2>' +
      '<table id="share-records"><thead><tr><th>member</th><th>partition</th><th>acquired</th><th>redelivered</th><th>accepted</th><th>released</th>' +
      '<th>rejected</th><th>refused</th><th>unacknowledged</th></tr></thead><tbody>';
    (sh.members || []).forEach(function (m) {
      h += '<tr data-member="' + esc(m.memberId) + '"><td>' + who(m.memberId) + '</td><td>all</td>' + counts(m) + '</tr>';
      (m.partitions || []).forEach(function (p) {
        h += '<tr class="sub"><td></td><td>' + esc(p.topic + '[' + p.partition + ']') + '</td>' + counts(p) + '</tr>';
      });
    });
    h += '<tr class="total"><td>group</td><td>all</td>' + counts(sh.totals) + '</tr></tbody></table>';
    if ((sh.redeliveries || []).length) {
      h += '<h2>Delivered again</h2><table id="share-redeliveries"><thead><tr><th>time</th><th>partition</th><th>offsets</th><th>records</th>' +
        '<th>delivery</th><th>to</th><th>held by</th><th>how</th></tr></thead><tbody>' + sh.redeliveries.map(function (r) {
          return '<tr><td>' + clock(ms(r.at)) + '</td><td>' + esc(r.topic + '[' + r.partition + ']') + '</td><td>' + esc(r.offsets) + '</td><td>' + r.records +
            '</td><td>' + r.deliveryCount + '</td><td>' + who(r.memberId) + '</td><td>' + who(r.from) + '</td><td class="bad">' + esc(r.how.replace(/_/g, ' ')) +
            (r.departedAt ? ' at ' + clock(ms(r.departedAt)) : '') + '</td></tr>';
        }).join('') + '</tbody></table>';
    }
    if (sh.redeliveriesDropped) h += '<div class="meta">' + sh.redeliveriesDropped + ' more redeliveries not kept</div>';
    return h;
  }

  // classicTasks is a classic Kafka Streams member's tasks (member.streams)
  // for its assignment cell: "tasks 0_0 0_1 (+0_1 −0_2) standby 1_0".
  function classicTasks(st) {
    if (!st || !st.active) return '';
    var moved = (st.activeGained || []).map(function (t) { return '+' + t; }).concat((st.activeLost || []).map(function (t) { return '−' + t; }));
    return '<div class="tasks">tasks ' + esc(st.active.join(' ') || 'none') + (moved.length ? ' (' + esc(moved.join(' ')) + ')' : '') +
      (st.standby && st.standby.length ? ' standby ' + esc(st.standby.join(' ')) : '') + '</div>';
  }

  function details() {
    var el = document.getElementById('details'), g = view.g;
    var gens = g.generations || [];
    var gen = gens.find(function (x) { return x.generation === view.selected; }) || gens[gens.length - 1];
    var lanes = view.model.byId;
    function who(id) {
      var l = lanes[id];
      return l ? esc(laneLabel(l).main) : esc(id);
    }
    if (g.streams) { el.innerHTML = streamsTables(g.streams, who); return; }
    if (!gen) { el.innerHTML = '<div class="empty">no generation yet</div>'; return; }
    var kip848 = epochGen(gen);
    var h = '';
    var migs = migrationsText(g);
    if (migs.length) h += '<div class="meta" id="migrations">' + migs.map(esc).join('<br>') + '</div>';
    h += '<h2 id="plan-title" data-gen="' + gen.generation + '">' + (kip848 ? 'Epoch ' : 'Generation ') + gen.generation + ' · ' + esc(gen.status) + '</h2>' +
      '<div class="meta">trigger ' + esc(gen.trigger.kind) + (gen.trigger.member ? ' ' + who(gen.trigger.member) : '') + (gen.trigger.reason ? ' (' + esc(gen.trigger.reason) + ')' : '') +
      (kip848 ? ' · reconciliation ' + dur(gen.reconcileMs) : ' · stop-the-world ' + dur(gen.stopTheWorldMs) + ' (join ' + dur(gen.joinMs) + ', sync ' + dur(gen.syncMs) + ')') +
      ' · waited for ' + (gen.waitedFor ? who(gen.waitedFor) : '-') + ' · leader ' + (gen.leader ? who(gen.leader) : '-') +
      ' · assignor ' + esc(gen.protocol) + ' (' + esc(gen.mode) + ')</div>';
    h += '<table id="plan"><thead><tr><th>member</th><th>member id</th><th>status</th><th>protocol</th>' + (kip848 ? '<th>epoch</th>' : '') +
      '<th>assignment</th><th>added</th><th>revoked</th><th>kept</th><th>join wait</th><th>stop-the-world</th></tr></thead><tbody>';
    (gen.members || []).forEach(function (mem) {
      h += '<tr data-member="' + esc(mem.memberId) + '" data-protocol="' + esc(mem.protocol || '') + '"><td>' + who(mem.memberId) + '</td><td>' + esc(mem.memberId) + '</td><td>' + esc(mem.status) + '</td>' +
        '<td class="protocol">' + esc(mem.protocol || '') + '</td>' +
        (kip848 ? '<td>' + (mem.memberEpoch == null ? '?' : mem.memberEpoch) + '</td>' : '') +
        '<td class="assignment">' + esc(parts(mem.assignment)) + classicTasks(mem.streams) + '</td><td>' + esc(parts(mem.added)) + '</td><td>' + esc(parts(mem.revoked)) + '</td>' +
        '<td>' + esc(parts(mem.kept)) + '</td><td>' + dur(mem.joinWaitMs) + '</td><td>' + dur(mem.stopTheWorldMs) + '</td></tr>';
    });
    (gen.departed || []).forEach(function (d) {
      h += '<tr class="departed"><td>' + who(d.memberId) + '</td><td>' + esc(d.memberId) + '</td><td>' + esc(d.how) + (d.reason ? ': ' + esc(d.reason) : '') + '</td><td></td>' +
        (kip848 ? '<td></td>' : '') + '<td>-</td><td>-</td><td>' + esc(parts(d.partitions)) + '</td><td>-</td><td></td><td></td></tr>';
    });
    h += '</tbody></table>';
    var commits = gen.commitsDuringRevocation || [];
    if (commits.length) {
      h += '<h2>Commits during revocation</h2><table><tbody>' + commits.map(function (c) {
        return '<tr><td>' + clock(ms(c.at)) + '</td><td>' + who(c.memberId) + '</td><td>' + esc(offsets(c.offsets)) + '</td><td class="' + (c.failed ? 'bad' : '') + '">' + esc(c.result) +
          (c.errors ? ' ' + esc(offsets(c.errors)) : '') + '</td><td>' + dur(c.latencyMs) + '</td><td class="' +
          (c.transaction && c.transaction.outcome === 'aborted' ? 'bad' : '') + '">' + esc(txnText(c.transaction).replace(/^; /, '')) + '</td></tr>';
      }).join('') + '</tbody></table>';
    }
    if (g.share) h += shareTables(g.share, who);
    el.innerHTML = h;
  }

  // wireChart binds zoom (wheel, buttons), pan (drag) and band clicks.
  function wireChart() {
    var chart = document.getElementById('chart');
    function zoom(f, at) {
      var m = view.model;
      if (!m) return;
      var span = (view.v1 - view.v0) * f;
      if (span < 1) span = 1;
      var full = m.t1 - m.t0;
      if (span >= full) { view.v0 = m.t0; view.v1 = m.t1; view.zoomed = false; draw(); return; }
      var c = at == null ? (view.v0 + view.v1) / 2 : at;
      var r = (c - view.v0) / (view.v1 - view.v0);
      view.v0 = c - r * span;
      view.v1 = view.v0 + span;
      view.zoomed = true;
      draw();
    }
    function timeAt(clientX) {
      var px = clientX - chart.getBoundingClientRect().left;
      return view.v0 + (px - LABEL_W) / (chartWidth() - LABEL_W - 10) * (view.v1 - view.v0);
    }
    chart.addEventListener('wheel', function (e) { e.preventDefault(); zoom(e.deltaY < 0 ? 0.8 : 1.25, timeAt(e.clientX)); }, { passive: false });
    document.getElementById('zin').onclick = function () { zoom(0.5); };
    document.getElementById('zout').onclick = function () { zoom(2); };
    document.getElementById('zreset').onclick = function () { zoom(Infinity); };
    var drag = null;
    chart.addEventListener('mousedown', function (e) { drag = { x: e.clientX, v0: view.v0, v1: view.v1, moved: false }; });
    window.addEventListener('mouseup', function () { setTimeout(function () { drag = null; }, 0); });
    window.addEventListener('mousemove', function (e) {
      if (!drag || !view.model) return;
      var dx = e.clientX - drag.x;
      if (Math.abs(dx) < 3 && !drag.moved) return;
      drag.moved = true;
      var dt = dx / (chartWidth() - LABEL_W - 10) * (drag.v1 - drag.v0);
      view.v0 = drag.v0 - dt;
      view.v1 = drag.v1 - dt;
      view.zoomed = true;
      draw();
    });
    chart.addEventListener('click', function (e) {
      if (drag && drag.moved) return;
      var b = e.target.closest ? e.target.closest('.band') : null;
      if (!b) return;
      view.selected = Number(b.getAttribute('data-gen'));
      draw();
      details();
    });
    window.addEventListener('resize', function () { draw(); });
  }

  // ---- start -----------------------------------------------------------

  function start() {
    if (timer) { clearTimeout(timer); timer = null; }
    var r = route();
    if (r.view === 'group') showGroup(r.group); else showList();
  }
  document.addEventListener('DOMContentLoaded', function () {
    app = document.getElementById('app');
    statusEl = document.getElementById('status');
    crumb = document.getElementById('crumb');
    if (fileData) {
      document.querySelector('header .home').setAttribute('href', '#/');
      window.addEventListener('hashchange', start);
    }
    start();
  });
})();
