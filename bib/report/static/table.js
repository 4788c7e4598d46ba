// bib report: filter rows of tables with class "filterable" (a global box and one box per column).
// Plain JavaScript, no libraries; works from file://.
(function () {
  "use strict";
  function rowsOf(table) { return Array.prototype.slice.call(table.tBodies[0].rows); }
  function apply(table) {
    var global = document.querySelector('input.table-filter[data-table="' + table.id + '"]');
    var needle = global ? global.value.trim().toLowerCase() : "";
    var columns = Array.prototype.map.call(table.querySelectorAll("input.column-filter"), function (box) {
      return [parseInt(box.getAttribute("data-column"), 10), box.value.trim().toLowerCase()];
    }).filter(function (c) { return c[1] !== ""; });
    var shown = 0, rows = rowsOf(table);
    rows.forEach(function (row) {
      var ok = !needle || row.textContent.toLowerCase().indexOf(needle) >= 0;
      for (var i = 0; ok && i < columns.length; i++) {
        var cell = row.cells[columns[i][0]];
        ok = !!cell && cell.textContent.toLowerCase().indexOf(columns[i][1]) >= 0;
      }
      row.style.display = ok ? "" : "none";
      if (ok) shown++;
    });
    var count = document.querySelector('span.count[data-table="' + table.id + '"]');
    if (count) count.textContent = shown + " of " + rows.length + " rows";
  }
  function setup() {
    Array.prototype.forEach.call(document.querySelectorAll("table.filterable"), function (table) {
      var boxes = table.querySelectorAll("input.column-filter");
      var global = document.querySelector('input.table-filter[data-table="' + table.id + '"]');
      Array.prototype.forEach.call(boxes, function (b) { b.addEventListener("input", function () { apply(table); }); });
      if (global) global.addEventListener("input", function () { apply(table); });
      apply(table);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
})();
