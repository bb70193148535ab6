/*
 * The outcomes dashboard: draws the two charts from the json_script data, sorts breakdown tables when a column
 * heading is clicked, submits the filter form when a selection changes, and refreshes the numbers while the tab
 * is visible (a fresh copy of the page replaces #ed-live and the caption: same window and filters, the sorted
 * columns kept). No inline handlers: everything is wired here, so the page works under a CSP without
 * 'unsafe-inline'.
 */
"use strict";

(function () {
  const PALETTE = {
    calls: "#417690",
    errors: "#ba2121",
    retry: "#2e7d32",
    firstRetry: "#8bc34a",
    interactive: "#6a1b9a",
    errorRate: "#e65100",
  };

  // Chart.js instances of the current content, destroyed before a refresh replaces their canvases.
  let charts = [];

  function readChartData() {
    const node = document.getElementById("ed-chart-data");
    return node ? JSON.parse(node.textContent) : null;
  }

  function percentTick(value) {
    return value + " %";
  }

  function targetDataset(label, value, count, color) {
    return {
      type: "line",
      label: label,
      data: new Array(count).fill(value),
      borderColor: color,
      borderDash: [6, 4],
      borderWidth: 1.5,
      pointRadius: 0,
      pointHoverRadius: 0,
      fill: false,
    };
  }

  /* "2 of 3": a rate's counts in a bucket, as the page's tables write them. */
  function countText(pair) {
    return pair[0].toLocaleString("en-US") + " of " + pair[1].toLocaleString("en-US");
  }

  function rateDataset(label, values, color) {
    return {
      type: "line",
      label: label,
      data: values,
      borderColor: color,
      backgroundColor: color,
      borderWidth: 2,
      pointRadius: 2,
      spanGaps: false,
      tension: 0.2,
    };
  }

  function drawCharts(data) {
    const Chart = window.Chart;
    const volume = document.getElementById("ed-chart-volume");
    const rates = document.getElementById("ed-chart-rates");
    if (!Chart || !volume || !rates) {
      return;
    }
    const style = getComputedStyle(document.body);
    Chart.defaults.color = style.color;
    Chart.defaults.font.family = style.fontFamily;
    Chart.defaults.maintainAspectRatio = false;
    const count = data.labels.length;

    charts.push(new Chart(volume, {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: [
          { label: "Calls", data: data.calls, backgroundColor: PALETTE.calls },
          { label: "Errors", data: data.errors, backgroundColor: PALETTE.errors },
        ],
      },
      options: {
        interaction: { mode: "index", intersect: false },
        scales: { y: { beginAtZero: true, ticks: { precision: 0 } } },
      },
    }));

    /*
     * A bucket with fewer than data.min_count calls (or episodes) has no rate point: one call is 0 % or 100 %,
     * and drawing it would make noise look like a swing. Its counts are still in the tooltip.
     */
    const rateSeries = [
      ["Retry success", "retry_success_rate", PALETTE.retry],
      ["First-retry success", "first_retry_success_rate", PALETTE.firstRetry],
      ["Interactive errors", "interactive_error_rate", PALETTE.interactive],
      ["Error rate", "error_rate", PALETTE.errorRate],
    ];
    const rateDatasets = rateSeries.map(function (spec) {
      const dataset = rateDataset(spec[0], data.rates[spec[1]], spec[2]);
      dataset.rateKey = spec[1];
      return dataset;
    });
    charts.push(new Chart(rates, {
      type: "line",
      data: {
        labels: data.labels,
        datasets: rateDatasets.concat([
          targetDataset("Retry success target", data.targets.retry_success_rate, count, PALETTE.retry),
          targetDataset("Interactive target", data.targets.interactive_error_rate, count, PALETTE.interactive),
        ]),
      },
      options: {
        interaction: { mode: "index", intersect: false },
        scales: { y: { min: 0, max: 100, ticks: { callback: percentTick } } },
        plugins: {
          tooltip: {
            callbacks: {
              label: function (item) {
                const key = item.dataset.rateKey;
                if (!key) {
                  return item.dataset.label + ": " + item.raw + " %";
                }
                const pair = data.counts[key][item.dataIndex];
                return item.dataset.label + ": " + (item.raw === null ? "—" : item.raw + " %") + " (" + countText(pair) + ")";
              },
              footer: function (items) {
                if (!items.length) {
                  return "";
                }
                const index = items[0].dataIndex;
                const shown = items.map(function (item) { return item.dataset.rateKey; });
                return rateSeries.filter(function (spec) {
                  const pair = data.counts[spec[1]][index];
                  return data.rates[spec[1]][index] === null && pair[1] > 0 && shown.indexOf(spec[1]) < 0;
                }).map(function (spec) {
                  return spec[0] + ": " + countText(data.counts[spec[1]][index]) + ", too few to rate";
                });
              },
            },
          },
        },
      },
    }));
  }

  /* Adaptive allocation: each code's shares over time, one stepped line per variant. */
  function drawAllocations() {
    const Chart = window.Chart;
    const node = document.getElementById("ed-allocation-data");
    if (!Chart || !node) {
      return;
    }
    const data = JSON.parse(node.textContent);
    const colors = [PALETTE.retry, PALETTE.errorRate, PALETTE.calls, PALETTE.interactive, PALETTE.firstRetry];
    document.querySelectorAll("canvas[data-allocation-chart]").forEach(function (canvas) {
      const chart = data[canvas.dataset.allocationChart];
      if (!chart) {
        return;
      }
      const datasets = Object.keys(chart.series).map(function (name, index) {
        const dataset = rateDataset(name, chart.series[name], colors[index % colors.length]);
        dataset.stepped = "before";
        dataset.tension = 0;
        return dataset;
      });
      charts.push(new Chart(canvas, {
        type: "line",
        data: { labels: chart.labels, datasets: datasets },
        options: {
          interaction: { mode: "index", intersect: false },
          scales: { y: { min: 0, max: 100, ticks: { callback: percentTick } } },
        },
      }));
    });
  }

  /* Sorting: numbers compare numerically, a missing value ("—", empty data-sort) always goes last. */
  function sortKey(row, index, numeric) {
    const cell = row.children[index];
    const raw = cell ? cell.getAttribute("data-sort") : "";
    if (raw === null || raw === "") {
      return null;
    }
    return numeric ? parseFloat(raw) : raw.toLowerCase();
  }

  /* Sorts by the button's column; ``direction`` given (a refresh keeping the sort), else the next one. */
  function sortTable(table, button, direction) {
    const index = Number(button.getAttribute("data-sort-index"));
    const numeric = button.getAttribute("data-sort-type") === "number";
    const header = button.closest("th");
    const current = header.getAttribute("aria-sort");
    if (!direction) {
      // Numbers start with the largest first (the busiest tool, the worst rate); text starts A to Z.
      direction = numeric ? "descending" : "ascending";
      if (current === "descending") {
        direction = "ascending";
      } else if (current === "ascending") {
        direction = "descending";
      }
    }
    const sign = direction === "ascending" ? 1 : -1;
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).filter(function (row) {
      return !row.classList.contains("ed-empty");
    });
    rows.sort(function (a, b) {
      const ka = sortKey(a, index, numeric);
      const kb = sortKey(b, index, numeric);
      if (ka === null || kb === null) {
        return (ka === null) - (kb === null);
      }
      if (ka < kb) {
        return -sign;
      }
      return ka > kb ? sign : 0;
    });
    rows.forEach(function (row) {
      body.appendChild(row);
    });
    table.querySelectorAll("thead th").forEach(function (th) {
      th.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", direction);
  }

  function wireSorting() {
    document.querySelectorAll("table.ed-sortable").forEach(function (table) {
      table.querySelectorAll("button.ed-sort").forEach(function (button) {
        button.addEventListener("click", function () {
          sortTable(table, button);
        });
      });
    });
  }

  function wireFilters() {
    document.querySelectorAll("form[data-autosubmit]").forEach(function (form) {
      form.querySelectorAll("select").forEach(function (select) {
        select.addEventListener("change", function () {
          form.requestSubmit();
        });
      });
    });
  }

  /* The sorted column of each sortable table (by table id), to sort the refreshed tables the same way. */
  function sortState() {
    const state = {};
    document.querySelectorAll("table.ed-sortable[id] th[aria-sort]").forEach(function (th) {
      state[th.closest("table").id] = { column: th.getAttribute("data-column"), direction: th.getAttribute("aria-sort") };
    });
    return state;
  }

  function restoreSort(state) {
    Object.keys(state).forEach(function (id) {
      const table = document.getElementById(id);
      const button = table && table.querySelector('th[data-column="' + CSS.escape(state[id].column) + '"] button.ed-sort');
      if (button) {
        sortTable(table, button, state[id].direction);
      }
    });
  }

  function render() {
    wireSorting();
    wireFilters();
    const data = readChartData();
    if (data) {
      drawCharts(data);
    }
    drawAllocations();
  }

  /*
   * Auto-refresh: every data-refresh-seconds while the tab is visible and not paused, fetch the page of the same
   * window and filters (data-refresh-url) and put its #ed-live and caption in place of these. A hidden tab fetches
   * nothing; shown again, it refreshes at once if an update is due. Someone using the filter form is not
   * interrupted: the update waits until the form loses focus.
   */
  function wireRefresh() {
    const root = document.getElementById("content-main");
    const toggle = document.getElementById("ed-refresh-toggle");
    const stateText = document.getElementById("ed-refresh-state");
    const updated = document.querySelector("#ed-updated time");
    if (!root || !toggle || !stateText || !updated || !root.dataset.refreshUrl) {
      return;
    }
    const seconds = Number(root.dataset.refreshSeconds) || 30;
    const url = root.dataset.refreshUrl;
    let paused = false;
    let failed = false;
    let timer = null;
    let due = Date.now() + seconds * 1000;

    function describe() {
      let text = "· refreshes every " + seconds + " s";
      if (paused) {
        text = "· auto-refresh paused";
      } else if (failed) {
        text = "· the last update failed; retrying every " + seconds + " s";
      }
      stateText.textContent = text;
      toggle.textContent = paused ? "Resume auto-refresh" : "Pause auto-refresh";
      toggle.setAttribute("aria-pressed", paused ? "true" : "false");
    }

    function schedule() {
      clearTimeout(timer);
      timer = null;
      if (!paused && !document.hidden) {
        timer = setTimeout(refresh, Math.max(0, due - Date.now()));
      }
    }

    function busy() {
      const form = document.querySelector("#ed-live form.ed-filters");
      return Boolean(form && form.contains(document.activeElement));
    }

    function swap(doc) {
      const live = doc.getElementById("ed-live");
      if (!live) {
        throw new Error("the response is not the dashboard (signed out?)");
      }
      const sorted = sortState();
      charts.forEach(function (chart) {
        chart.destroy();
      });
      charts = [];
      document.getElementById("ed-live").replaceWith(document.adoptNode(live));
      const caption = doc.getElementById("ed-caption");
      const current = document.getElementById("ed-caption");
      if (caption && current) {
        current.replaceWith(document.adoptNode(caption));
      }
      render();
      restoreSort(sorted);
      updated.textContent = live.dataset.updated || "";
      updated.setAttribute("datetime", live.dataset.updated || "");
    }

    async function refresh() {
      timer = null;
      if (paused || document.hidden) {
        return;
      }
      if (busy()) {
        due = Date.now() + 2000;
        schedule();
        return;
      }
      try {
        const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        swap(new DOMParser().parseFromString(await response.text(), "text/html"));
        failed = false;
      } catch (error) {
        failed = true;
      }
      due = Date.now() + seconds * 1000;
      describe();
      schedule();
    }

    toggle.addEventListener("click", function () {
      paused = !paused;
      if (!paused) {
        due = Date.now();
      }
      describe();
      schedule();
    });
    document.addEventListener("visibilitychange", function () {
      schedule();
    });
    toggle.hidden = false;
    describe();
    schedule();
  }

  document.addEventListener("DOMContentLoaded", function () {
    render();
    wireRefresh();
  });
})();
