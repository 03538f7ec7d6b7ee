// Backward step-through widgets (S10): relu(a*b + c)*a from results/S10/backward_steps.csv and doc 000's
// reused value from results/S10/reuse_steps.csv. Plain JS, no libraries: draws the graph as SVG, one
// reverse-pass step at a time. stepper(id, rows, watch): elements "<id>", "<id>-plot", "<id>-status",
// "<id>-mode", "<id>-prev", "<id>-next", "<id>-reset"; `watch` is the node named in the status line.
function stepper(id, rows, watch) {
  const root = document.getElementById(id);
  if (!root || !rows.length) return;
  const svg = document.getElementById(id + "-plot");
  const status = document.getElementById(id + "-status");
  const modeSel = document.getElementById(id + "-mode");
  const NS = "http://www.w3.org/2000/svg";
  let step = 0;

  const nodes = [...new Set(rows.map(r => r.node))];
  const firstMode = modeSel.options[0].value;
  const first = Object.fromEntries(rows.filter(r => r.step === 0 && r.mode === firstMode).map(r => [r.node, r]));
  const counted = rows[0].pending !== undefined;  // dependency-counting engine: show what each node still waits for
  const depth = {};
  const depthOf = n => {
    if (depth[n] !== undefined) return depth[n];
    const ps = first[n].parents ? first[n].parents.split("|") : [];
    return (depth[n] = ps.length ? 1 + Math.max(...ps.map(depthOf)) : 0);
  };
  nodes.forEach(depthOf);
  const cols = {};
  nodes.forEach(n => (cols[depth[n]] = cols[depth[n]] || []).push(n));
  const W = 150, H = counted ? 78 : 62, GX = 40, GY = 22, TOP = 46;  // TOP leaves room for edges that skip a column
  const pos = {};
  Object.entries(cols).forEach(([d, ns]) => ns.forEach((n, i) => {
    pos[n] = { x: 10 + d * (W + GX), y: TOP + i * (H + GY) };
  }));
  const maxDepth = Math.max(...Object.values(depth));
  const maxRows = Math.max(...Object.values(cols).map(c => c.length));
  svg.setAttribute("viewBox", `0 0 ${20 + (maxDepth + 1) * (W + GX) - GX} ${TOP + 10 + maxRows * (H + GY) - GY}`);

  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const fmt = v => Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+$/, "");

  function draw() {
    const mode = modeSel.value;
    const mine = rows.filter(r => r.mode === mode);
    const last = Math.max(...mine.map(r => r.step));
    step = Math.min(step, last);
    const now = Object.fromEntries(mine.filter(r => r.step === step).map(r => [r.node, r]));
    const prev = Object.fromEntries(mine.filter(r => r.step === Math.max(0, step - 1)).map(r => [r.node, r]));
    svg.replaceChildren();
    nodes.forEach(n => (first[n].parents ? first[n].parents.split("|") : []).forEach(p => {
      const x1 = pos[p].x + W, y1 = pos[p].y + H / 2, x2 = pos[n].x, y2 = pos[n].y + H / 2;
      // A same-row edge that skips columns arcs above the boxes, so a reused input stays visible.
      const d = depth[n] - depth[p] > 1 && pos[p].y === pos[n].y
        ? `M ${pos[p].x + W / 2} ${pos[p].y} C ${pos[p].x + W / 2} 4, ${pos[n].x + W / 2} 4, ${pos[n].x + W / 2} ${pos[n].y}`
        : `M ${x1} ${y1} L ${x2} ${y2}`;
      svg.appendChild(el("path", { d, fill: "none", stroke: "#9aa0a6", "stroke-width": 1.5 }));
    }));
    nodes.forEach(n => {
      const r = now[n];
      const active = step > 0 && r.active === n;
      const changed = step > 0 && prev[n].grad !== r.grad;
      const g = el("g", { "data-node": n, "data-grad": r.grad });
      g.appendChild(el("rect", { x: pos[n].x, y: pos[n].y, width: W, height: H, rx: 6,
        fill: active ? "#fff3c4" : changed ? "#e3f0ff" : "#fff", stroke: active ? "#b06000" : "#5f6368",
        "stroke-width": active ? 2.5 : 1 }));
      g.appendChild(el("text", { x: pos[n].x + 8, y: pos[n].y + 18, "font-weight": 600, "font-size": 13 }, n));
      g.appendChild(el("text", { x: pos[n].x + 8, y: pos[n].y + 36, "font-size": 12 }, `value ${fmt(r.value)}`));
      g.appendChild(el("text", { x: pos[n].x + 8, y: pos[n].y + 53, "font-size": 12,
        fill: changed ? "#0b57d0" : "#1d1d1f" }, `grad ${fmt(r.grad)}`));
      if (counted) g.appendChild(el("text", { x: pos[n].x + 8, y: pos[n].y + 70, "font-size": 12,
        fill: r.pending > 0 && r.op !== "leaf" ? "#b3261e" : "#5f6368" }, `waits for ${r.pending}`));
      svg.appendChild(g);
    });
    const a = now[watch];
    status.textContent = step === 0
      ? `Step 0 of ${last}: the output's gradient is seeded with 1; every other gradient starts at 0.`
      : `Step ${step} of ${last}: ran the backward closure of ${mine.find(r => r.step === step).active}` +
        ` (mode ${mode}). ${watch}.grad is now ${fmt(a.grad)}` + (step === last ? " — final." : ".");
    document.getElementById(id + "-prev").disabled = step === 0;
    document.getElementById(id + "-next").disabled = step === last;
  }
  document.getElementById(id + "-next").addEventListener("click", () => { step += 1; draw(); });
  document.getElementById(id + "-prev").addEventListener("click", () => { step = Math.max(0, step - 1); draw(); });
  document.getElementById(id + "-reset").addEventListener("click", () => { step = 0; draw(); });
  modeSel.addEventListener("change", draw);
  draw();
}
