// Keeps the current page's entry of the sidebar in view, so that a page far
// down the table of contents (a reference page, a runbook) shows where it is.
(function () {
  "use strict";
  var nav = document.querySelector(".sidebar");
  var current = nav && nav.querySelector("a.current");
  if (!current || current.classList.contains("home")) return;
  var top = current.getBoundingClientRect().top - nav.getBoundingClientRect().top + nav.scrollTop;
  if (top + current.offsetHeight > nav.clientHeight) {
    nav.scrollTop = top - nav.clientHeight / 3;
  }
})();
