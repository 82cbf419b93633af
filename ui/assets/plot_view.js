// A plotly figure that stays mounted: each new figure is applied in place with Plotly.react.
// st.plotly_chart gives a chart a new element id whenever its figure changes, so the browser
// re-mounted the gauge and the load chart (a full Plotly.newPlot) on every step of the player.
// plotly.js is the copy shipped with the plotly Python package, on the app's own static route.
const LOADING = {};

// Streamlit's plotly theme as st.plotly_chart applies it to these charts (the light theme of
// .streamlit/config.toml), so the charts look as they did when Streamlit drew them.
const FONT = '"Source Sans", sans-serif';
const MUTED = "#808495";
const LINE = "#e6eaf1";
const TEMPLATE = {
  layout: {
    font: { color: MUTED, family: FONT, size: 12, weight: 400 },
    paper_bgcolor: "#FFFFFF",
    plot_bgcolor: "#FFFFFF",
    xaxis: {
      zerolinecolor: LINE, gridcolor: LINE, showgrid: false, zeroline: false, automargin: true,
      tickfont: { color: MUTED, size: 12 }, tickcolor: LINE, title: { font: { color: MUTED, size: 14 }, standoff: 20 },
    },
    yaxis: {
      ticklabelposition: "outside", zerolinecolor: LINE, gridcolor: LINE, automargin: true,
      tickfont: { color: MUTED, size: 12 }, tickcolor: LINE, title: { font: { color: MUTED, size: 14 }, standoff: 24 },
    },
    margin: { pad: 8, r: 0, l: 0 },
    hoverlabel: { bgcolor: "#FFFFFF", bordercolor: "rgba(47, 45, 43, 0.2)", font: { color: MUTED, family: FONT, size: 12 } },
  },
};

function loadPlotly(url) {
  if (window.Plotly && window.Plotly.react) return Promise.resolve(window.Plotly);
  if (!LOADING[url]) {
    LOADING[url] = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => { delete LOADING[url]; reject(new Error("plotly.js could not be loaded")); };
      document.head.appendChild(s);
    });
  }
  return LOADING[url];
}

export default function render(component) {
  const { data, parentElement } = component;
  const box = parentElement.querySelector(".ks-plot");
  box.style.height = data.figure.layout.height + "px";
  loadPlotly(data.lib).then((Plotly) => {
    const layout = { ...data.figure.layout, template: TEMPLATE, autosize: true };
    Plotly.react(box, data.figure.data, layout, data.config);
    if (!box.__ksResize) {  // follow the column's width, as st.plotly_chart does
      box.__ksResize = new ResizeObserver(() => { if (box._fullLayout) Plotly.Plots.resize(box); });
      box.__ksResize.observe(box);
    }
  }).catch((e) => { box.textContent = "The chart could not be drawn: " + e.message; });
}

// the loader (ui/simulate/gauge.py) calls this directly once the module is loaded (no import() round trip)
(window.__ksPlotRender ||= {})[import.meta.url] = render;
