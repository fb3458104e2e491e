// allot dashboard: refreshes each panel from its server-rendered fragment, without reloading;
// when the session has ended (401), goes back to the sign-in form, which says so.
(function () {
  "use strict";
  var INTERVAL = 2000;
  var leaving = false; // the session ended: one navigation back to the sign-in form
  var status = document.getElementById("refresh-status");
  function refresh(panel) {
    var name = panel.getAttribute("data-fragment");
    return fetch("/ui/fragment/" + name, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 401 && !leaving) {
          leaving = true;
          window.location.assign("/ui?ended=1");
        }
        if (!response.ok) { throw new Error(name + ": HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        if (panel.getAttribute("data-html") !== html) {
          var focused = document.activeElement && document.activeElement.id;
          panel.innerHTML = html;
          panel.setAttribute("data-html", html);
          if (focused) { var again = document.getElementById(focused); if (again) { again.focus(); } }
        }
      });
  }
  function tick() {
    var panels = document.querySelectorAll("[data-fragment]");
    Promise.all(Array.prototype.map.call(panels, refresh))
      .then(function () { if (status) { status.textContent = "updated " + new Date().toLocaleTimeString(); } })
      .catch(function (error) { if (status) { status.textContent = "update failed: " + error.message; } })
      .then(function () { if (!leaving) { window.setTimeout(tick, INTERVAL); } });
  }
  window.setTimeout(tick, INTERVAL);
})();
