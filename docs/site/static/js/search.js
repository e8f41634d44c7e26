// The book's search: Hugo writes index.json (layouts/index.json), one entry
// per page with its title, URL, group and plain text; this script loads it
// on first use and searches it in the browser. No library, no network but
// the site itself.
(function () {
  "use strict";
  var input = document.getElementById("search");
  var list = document.getElementById("search-results");
  if (!input || !list) return;
  var index = null, loading = null, active = -1;

  function load() {
    if (!loading) {
      loading = fetch(input.dataset.index)
        .then(function (r) {
          if (!r.ok) throw new Error("search index: HTTP " + r.status);
          return r.json();
        })
        .then(function (entries) {
          index = entries.map(function (e) {
            return { title: e.title, url: e.url, group: e.group || "", text: e.text || "",
              ltitle: e.title.toLowerCase(), ltext: (e.text || "").toLowerCase() };
          });
          return index;
        });
    }
    return loading;
  }

  function escapeHTML(s) {
    return s.replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function count(hay, needle) {
    var n = 0, i = hay.indexOf(needle);
    while (i !== -1 && n < 50) { n++; i = hay.indexOf(needle, i + needle.length); }
    return n;
  }

  function highlight(text, terms) {
    var out = escapeHTML(text);
    terms.forEach(function (t) {
      var re = new RegExp("(" + escapeHTML(t).replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + ")", "gi");
      out = out.replace(re, "<mark>$1</mark>");
    });
    return out;
  }

  function snippet(e, terms) {
    var at = -1;
    for (var i = 0; i < terms.length && at === -1; i++) at = e.ltext.indexOf(terms[i]);
    if (at === -1) return e.text.slice(0, 160);
    var start = Math.max(0, at - 60), end = Math.min(e.text.length, at + 120);
    // Start and end on whole words.
    var sp = e.text.indexOf(" ", start);
    if (start > 0 && sp !== -1 && sp < at) start = sp + 1;
    sp = e.text.lastIndexOf(" ", end);
    if (end < e.text.length && sp > at) end = sp;
    return (start > 0 ? "… " : "") + e.text.slice(start, end) + (end < e.text.length ? " …" : "");
  }

  // search returns the entries holding every term of the query, best first.
  function search(query) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!terms.length) return [];
    var hits = [];
    index.forEach(function (e) {
      var score = 0;
      for (var i = 0; i < terms.length; i++) {
        var inTitle = e.ltitle.indexOf(terms[i]) !== -1, n = count(e.ltext, terms[i]);
        if (!inTitle && !n) return;
        score += (inTitle ? 20 : 0) + Math.min(n, 20);
      }
      if (e.ltitle === query.toLowerCase().trim()) score += 100;
      hits.push({ e: e, score: score });
    });
    hits.sort(function (a, b) { return b.score - a.score || a.e.title.localeCompare(b.e.title); });
    return hits.slice(0, 20).map(function (h) {
      return { title: h.e.title, url: h.e.url, group: h.e.group, snippet: snippet(h.e, terms) };
    });
  }

  function render(query, results) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    active = -1;
    if (!terms.length) { list.hidden = true; list.innerHTML = ""; return; }
    if (!results.length) {
      list.innerHTML = '<li class="none">Nothing found for “' + escapeHTML(query) + '”.</li>';
    } else {
      list.innerHTML = results.map(function (r) {
        return '<li><a href="' + escapeHTML(r.url) + '"><span class="t">' + escapeHTML(r.title) + "</span>" +
          (r.group ? '<span class="g">' + escapeHTML(r.group) + "</span>" : "") +
          '<span class="s">' + highlight(r.snippet, terms) + "</span></a></li>";
      }).join("");
    }
    list.hidden = false;
  }

  function update() {
    var q = input.value;
    load().then(function () { if (input.value === q) render(q, search(q)); })
      .catch(function (err) { list.innerHTML = '<li class="none">' + escapeHTML(String(err)) + "</li>"; list.hidden = false; });
  }

  function move(by) {
    var links = list.querySelectorAll("a");
    if (!links.length) return;
    if (active >= 0) links[active].classList.remove("active");
    active = (active + by + links.length) % links.length;
    links[active].classList.add("active");
    links[active].scrollIntoView({ block: "nearest" });
  }

  input.addEventListener("focus", load);
  input.addEventListener("input", update);
  input.addEventListener("keydown", function (ev) {
    if (ev.key === "ArrowDown") { ev.preventDefault(); move(1); }
    else if (ev.key === "ArrowUp") { ev.preventDefault(); move(-1); }
    else if (ev.key === "Escape") { list.hidden = true; input.blur(); }
    else if (ev.key === "Enter") {
      var links = list.querySelectorAll("a");
      if (links.length) window.location.href = links[Math.max(active, 0)].href;
    }
  });
  document.addEventListener("click", function (ev) {
    if (!list.contains(ev.target) && ev.target !== input) list.hidden = true;
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "/" && document.activeElement !== input) { ev.preventDefault(); input.focus(); }
  });

  // For the site test: the results of a query, as the list shows them.
  window.captfSearch = function (query) {
    return load().then(function () { return search(query); });
  };
})();
