// Sorting, filtering and row details of the items table. Every value from the data is written
// with textContent (never innerHTML), so no text in a report can become markup or code.
(function () {
  "use strict";
  var table = document.getElementById("items");
  var dataEl = document.getElementById("report-data");
  if (!table || !dataEl) { return; }
  var payload = JSON.parse(dataEl.textContent);
  var bodies = Array.prototype.slice.call(table.tBodies);
  var fMetric = document.getElementById("f-metric");
  var fMin = document.getElementById("f-min");
  var fMax = document.getElementById("f-max");
  var fFail = document.getElementById("f-failures");
  var count = document.getElementById("shown-count");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function score(body) {
    return body.dataset.score === "" ? null : parseFloat(body.dataset.score);
  }

  function bound(input) {
    var v = input.value.trim();
    return v === "" || isNaN(parseFloat(v)) ? null : parseFloat(v);
  }

  function applyFilters() {
    var metric = fMetric.value, lo = bound(fMin), hi = bound(fMax), failOnly = fFail.checked;
    var shown = 0;
    bodies.forEach(function (b) {
      var s = score(b);
      var ok = (!metric || b.dataset.metric === metric) && (!failOnly || b.dataset.failed === "1");
      if (ok && lo !== null) { ok = s !== null && s >= lo; }
      if (ok && hi !== null) { ok = s !== null && s <= hi; }
      b.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = shown + " of " + bodies.length + " rows";
  }

  var sortKey = null, sortDir = 1;
  function sortValue(key, body) {
    if (key === "score") { return score(body); }
    if (key === "index") { return Number(body.dataset.index); }
    return body.dataset[key];
  }
  function sortBy(key) {
    sortDir = sortKey === key ? -sortDir : 1;
    sortKey = key;
    var sorted = bodies.slice().sort(function (a, b) {
      var x = sortValue(key, a), y = sortValue(key, b), c = 0;
      if (x === null || y === null) {
        if (x !== y) { return x === null ? 1 : -1; }  // unscored rows last, either direction
      } else {
        c = typeof x === "string" ? x.localeCompare(y, undefined, { numeric: true }) : x - y;
      }
      return c * sortDir || Number(a.dataset.n) - Number(b.dataset.n);
    });
    sorted.forEach(function (b) { table.appendChild(b); });
    table.querySelectorAll("thead th[aria-sort]").forEach(function (th) {
      var mine = th.querySelector("button").dataset.sort === key;
      th.setAttribute("aria-sort", mine ? (sortDir > 0 ? "ascending" : "descending") : "none");
    });
  }

  function field(dl, label, value) {
    if (value === null || value === undefined || value === "") { return; }
    dl.appendChild(el("dt", "", label));
    dl.appendChild(el("dd", "", value));
  }

  function details(item) {
    var rec = payload.records[String(item.index)] || null;
    var box = el("div", "detail-box");
    if (rec) {
      var dl = el("dl");
      field(dl, "question", rec.user_input);
      field(dl, "reference", rec.reference);
      field(dl, "response", rec.response);
      box.appendChild(dl);
    } else {
      box.appendChild(el("p", "note", payload.note));
    }
    if (item.error) {
      var e = item.error;
      box.appendChild(el("p", "error", (e.kind || "error") + (e.field ? " (" + e.field + ")" : "") +
        ": " + e.message + (e.hint ? " (" + e.hint + ")" : "")));
    }
    var t = item.table, withPieces = rec && t.rows.some(function (r) { return r.piece !== null; });
    var withClose = t.rows.some(function (r) { return r.close; });
    if (t.rows.length) {
      var tbl = el("table", "verdicts"), head = el("tr");
      t.columns.forEach(function (c) { head.appendChild(el("th", "", c)); });
      if (withPieces) { head.appendChild(el("th", "", "context")); }
      head.appendChild(el("th", "", "lowers the score"));
      if (withClose) { head.appendChild(el("th", "", "close call")); }
      tbl.appendChild(el("thead")).appendChild(head);
      var tb = el("tbody");
      t.rows.forEach(function (r) {
        var tr = el("tr", [r.flag ? "flag" : "", r.close ? "close" : ""].join(" ").trim());
        r.cells.forEach(function (c) { tr.appendChild(el("td", "", c)); });
        if (withPieces) { tr.appendChild(el("td", "ctx", r.piece === null ? "" : rec.contexts[r.piece])); }
        tr.appendChild(el("td", "flagnote", r.flag || ""));
        if (withClose) { tr.appendChild(el("td", "closenote", r.close || "")); }
        tb.appendChild(tr);
      });
      tbl.appendChild(tb);
      box.appendChild(tbl);
    }
    if (t.missing.length) {
      box.appendChild(el("h3", "", "Missing information (lowers the score)"));
      var ul = el("ul", "missing");
      t.missing.forEach(function (m) { ul.appendChild(el("li", "flag", m)); });
      box.appendChild(ul);
    }
    if (rec && !withPieces && rec.contexts.length) {
      box.appendChild(el("h3", "", "Contexts"));
      var ol = el("ol", "contexts");
      ol.start = 0;
      rec.contexts.forEach(function (c) { ol.appendChild(el("li", "", c)); });
      box.appendChild(ol);
    }
    t.notes.forEach(function (n) { box.appendChild(el("p", "note", n)); });
    var s = item.stats, bits = [];
    if (s.seconds !== undefined) { bits.push(s.seconds + " s"); }
    if (s.prompt_tokens !== undefined) { bits.push(s.prompt_tokens + " prompt tokens"); }
    if (s.completion_tokens !== undefined) { bits.push(s.completion_tokens + " completion tokens"); }
    if (bits.length) { box.appendChild(el("p", "note", bits.join(" · "))); }
    return box;
  }

  function toggle(body) {
    var button = body.querySelector(".toggle"), row = body.querySelector("tr.detail");
    var open = button.getAttribute("aria-expanded") !== "true";
    if (open && !row.firstElementChild.hasChildNodes()) {
      row.firstElementChild.appendChild(details(payload.items[Number(body.dataset.n)]));
    }
    row.hidden = !open;
    button.setAttribute("aria-expanded", open ? "true" : "false");
    button.textContent = open ? "\u2212" : "+";
  }

  table.addEventListener("click", function (ev) {
    var sortButton = ev.target.closest("thead button[data-sort]");
    if (sortButton) { sortBy(sortButton.dataset.sort); return; }
    var main = ev.target.closest("tr.main");
    if (main && !window.getSelection().toString()) { toggle(main.parentNode); }
  });
  [fMetric, fMin, fMax, fFail].forEach(function (input) {
    input.addEventListener("input", applyFilters);
    input.addEventListener("change", applyFilters);
  });
  document.getElementById("filters").addEventListener("reset", function () {
    window.setTimeout(applyFilters, 0);
  });
  applyFilters();
}());
