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
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        var here = document.getElementById("live");
        if (next && here) { here.replaceWith(next); }
        body.dataset.updated = String(Date.now());
      });
  }

  var source = new EventSource(url + "?after=" + encodeURIComponent(body.dataset.cursor || ""));
  source.addEventListener("relay", function (e) {
    var data = {};
    try { data = JSON.parse(e.data); } catch (err) { return; }
    if (only && data.instance_id !== only) { return; }
    // At most one redraw a second, however busy the log is.
    if (pending === null) { pending = window.setTimeout(redraw, 1000); }
  });
})();
