// Live updates: follow the event log (server-sent events from /ui/events, from
// the cursor the page was drawn at; the browser resumes with Last-Event-ID) and
// redraw the page's live part when something relevant happened. No framework.
(function () {
  "use strict";
  var body = document.body;
  var url = body.dataset.events;
  if (!url || !window.EventSource) { return; }
  var only = body.dataset.instance || null;
  var pending = null;

  function redraw() {
    pending = null;
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var page = new DOMParser().parseFromString(html, "text/html");
        swap(page, "live");
        // The actions too (a new draft to approve), unless someone is typing in them.
        swap(page, "actions");
        body.dataset.updated = String(Date.now());
      });
  }

  function swap(page, id) {
    var next = page.getElementById(id);
    var here = document.getElementById(id);
    if (!next || !here) { return; }
    if (id !== "live" && (here.contains(document.activeElement) || here.dataset.dirty)) {
      return;
    }
    here.replaceWith(next);
  }

  document.addEventListener("input", function (e) {
    var actions = e.target.closest ? e.target.closest("#actions") : null;
    if (actions) { actions.dataset.dirty = "1"; }
  });

  var source = new EventSource(url + "?after=" + encodeURIComponent(body.dataset.cursor || ""));
  source.addEventListener("relay", function (e) {
    var data = {};
    try { data = JSON.parse(e.data); } catch (err) { return; }
    if (only && data.instance_id !== only) { return; }
    // At most one redraw a second, however busy the log is.
    if (pending === null) { pending = window.setTimeout(redraw, 1000); }
  });
})();
