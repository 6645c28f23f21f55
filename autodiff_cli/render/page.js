// The step-through page's script (render/page.py puts it inline).  It reads the frames from the
// JSON in #autodiff-data and shows frame k by replaying frames 0..k: what is known, each
// node's gradient so far, the edges the gradient has passed; then it marks the current frame.
// Every text it writes goes through textContent, never through HTML.
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("autodiff-data").textContent);
  if (data.kind === "tensor") {
    tensorPage(data);
    return;
  }
  var frames = data.frames;
  var nodes = data.nodes;
  var last = frames.length - 1;
  var container = document.getElementById("graph");
  var svg = container.querySelector("svg");
  var drawing = svg.querySelector("g.graph") || svg;

  var box = [], dataField = [], gradField = [], opNode = [], resultEdge = [];
  var operandEdge = {}, usesOf = [];
  function each(selector, action) {
    Array.prototype.forEach.call(svg.querySelectorAll(selector), action);
  }
  function number(element, name) {
    return Number(element.getAttribute(name));
  }
  each("[data-node]", function (g) {
    var i = number(g, "data-node");
    box[i] = g;
    dataField[i] = g.querySelector(".ad-data");
    gradField[i] = g.querySelector(".ad-grad");
  });
  each("[data-op]", function (g) { opNode[number(g, "data-op")] = g; });
  each("[data-result]", function (g) { resultEdge[number(g, "data-result")] = g; });
  each("[data-child]", function (g) {
    var child = number(g, "data-child");
    operandEdge[g.getAttribute("data-parent") + ":" + g.getAttribute("data-operand")] = g;
    (usesOf[child] = usesOf[child] || []).push(g);
  });

  var stepText = document.getElementById("step-text");
  var now = document.getElementById("now");
  var phase = document.getElementById("phase");
  var counter = document.getElementById("counter");
  var playButton = document.getElementById("play");
  var speed = document.getElementById("speed");
  var large = document.getElementById("large");
  var detail = document.getElementById("node-detail");
  var width = parseFloat(svg.getAttribute("width"));
  var height = parseFloat(svg.getAttribute("height"));
  var unit = (svg.getAttribute("width") || "").replace(/^[0-9.]+/, "");

  var position = 0;
  var timer = null;
  var selected = null;

  function edgesInto(i) {
    return [operandEdge[i + ":0"], operandEdge[i + ":1"], resultEdge[i]].filter(Boolean);
  }

  // What frame k leaves behind: which values are known, each gradient so far, the edges passed.
  function stateAt(k) {
    var known = nodes.map(function (node) { return node.constant; });
    var grads = nodes.map(function () { return null; });
    var passed = [];
    for (var f = 1; f <= k; f++) {
      var frame = frames[f];
      if (frame.pass === "forward") {
        known[frame.node] = true;
      } else if (frame.kind === "seed") {
        // The backward pass starts from zero gradients, as micrograd's does: += adds to them.
        nodes.forEach(function (node, i) { if (!node.constant) grads[i] = data.zero; });
        grads[frame.node] = frame.grad;
      } else if (frame.kind === "step") {
        grads[frame.node] = frame.grad;
        passed.push(operandEdge[frame.parent + ":" + frame.operand], resultEdge[frame.parent]);
      } else if (frame.kind === "total") {
        grads[frame.node] = frame.grad;
      }
    }
    return { known: known, grads: grads, passed: passed };
  }

  // What is on screen, so that a step writes only what changed: between two steps that is a few
  // boxes and edges, where rewriting all of them made a step of a 2,000-value graph take 0.4 s.
  var shownStates = new Map();  // element -> its state classes, joined by spaces
  var shownText = new Map();  // element -> its text
  var shownLabel = new Map();  // element -> its aria-label
  var wanted = null;  // element -> state classes, collected by mark() while show() runs

  function mark(element, state) {
    if (!element) return;
    var states = wanted.get(element);
    if (states) states.push(state); else wanted.set(element, [state]);
  }

  function paintStates() {
    shownStates.forEach(function (states, element) {
      if (!wanted.has(element)) {
        element.classList.remove.apply(element.classList, states.split(" "));
        shownStates.delete(element);
      }
    });
    wanted.forEach(function (states, element) {
      var classes = states.join(" "), before = shownStates.get(element);
      if (classes === before) return;
      if (before) element.classList.remove.apply(element.classList, before.split(" "));
      element.classList.add.apply(element.classList, states);
      shownStates.set(element, classes);
    });
  }

  function write(element, text) {
    if (!element || shownText.get(element) === text) return;
    element.textContent = text;
    shownText.set(element, text);
  }

  function label(element, text) {
    if (shownLabel.get(element) === text) return;
    element.setAttribute("aria-label", text);
    shownLabel.set(element, text);
  }

  function gradText(i, grads) {
    if (grads[i] !== null) return grads[i];
    return nodes[i].constant ? "\u2013" : "?";
  }

  function show(k) {
    position = Math.max(0, Math.min(last, k));
    var state = stateAt(position);
    wanted = new Map();
    each(".ad-callout", function (element) { element.parentNode.removeChild(element); });
    nodes.forEach(function (node, i) {
      if (!box[i]) return;
      var value = state.known[i] ? node.data : "?";
      write(dataField[i], "data " + value);
      var grad = gradText(i, state.grads);
      if (gradField[i]) write(gradField[i], "grad " + grad);
      if (!state.known[i]) mark(box[i], "ad-pending");
      var words = node.name + ", " + node.kind + (node.about ? " (" + node.about + ")" : "");
      words += ": data " + value + (gradField[i] ? ", grad " + grad : "");
      label(box[i], words + ". Enter: its gradient as the sum over its uses.");
    });
    state.passed.forEach(function (edge) { mark(edge, "ad-passed"); });
    var frame = frames[position];
    var numbers = "";
    var edge = null;
    if (frame.pass === "forward") {
      mark(box[frame.node], "ad-current");
      mark(opNode[frame.node], "ad-flow");
      edgesInto(frame.node).forEach(function (into) { mark(into, "ad-flow"); });
    } else if (frame.kind === "seed") {
      mark(box[frame.node], "ad-receiving");
    } else if (frame.kind === "step") {
      edge = operandEdge[frame.parent + ":" + frame.operand];
      mark(box[frame.node], "ad-receiving");
      mark(box[frame.parent], "ad-upstream");
      mark(edge, "ad-now");
      mark(resultEdge[frame.parent], "ad-now");
      mark(opNode[frame.parent], "ad-now");
      numbers = "local \u00d7 upstream = contribution: " + frame.callout;
    } else if (frame.kind === "total") {
      mark(box[frame.node], "ad-summed");
      (usesOf[frame.node] || []).forEach(function (use) { mark(use, "ad-summed"); });
    }
    if (selected !== null) highlightUses(selected);
    paintStates();
    if (edge) callout(edge, frame.callout, frame.accumulate);
    var focus = box[frame.node];
    // The step text stays at the top of the window (position: sticky): scrolling a box into view
    // must leave it clear of that.
    document.documentElement.style.scrollPaddingTop = (now.offsetHeight + 8) + "px";
    if (focus && position > 0 && focus.scrollIntoView) {
      focus.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
    stepText.textContent = frame.text + (numbers ? "\n" + numbers : "");
    stepText.className = frame.pass + (frame.accumulate || frame.kind === "total" ? " accumulate" : "");
    phase.textContent = {
      start: "before the forward pass",
      forward: data.headings.forward,
      backward: data.headings.backward,
      end: data.backward ? "the full gradient picture" : "the forward pass is done"
    }[frame.pass];
    counter.textContent = "step " + position + " of " + last;
    if (position === last) pause();
  }

  // The boxes of every node and edge label, to keep callouts off them (once: the layout never moves).
  var obstacles = null;
  function nodeBoxes() {
    if (obstacles === null) {
      obstacles = [];
      each("g.node, g.edge text", function (g) { obstacles.push(g.getBBox()); });  // boxes, edge labels
    }
    return obstacles;
  }

  // All of #graph that can be scrolled to, in the drawing's units: a callout may use the padding
  // and any width the drawing leaves free, but not run out of the scroll box.
  function room() {
    var box = container.getBoundingClientRect();
    var left = box.left + container.clientLeft - container.scrollLeft;
    var top = box.top + container.clientTop - container.scrollTop;
    var inverse = drawing.getScreenCTM().inverse();
    function inDrawing(x, y) {
      var point = svg.createSVGPoint();
      point.x = x;
      point.y = y;
      return point.matrixTransform(inverse);
    }
    var a = inDrawing(left, top), b = inDrawing(left + container.scrollWidth, top + container.scrollHeight);
    return { x: Math.min(a.x, b.x), y: Math.min(a.y, b.y), width: Math.abs(b.x - a.x),
             height: Math.abs(b.y - a.y) };
  }

  function overlap(a, b) {
    var w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
    var h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
    return w > 0 && h > 0 ? w * h : 0;
  }

  // The label "local x upstream = contribution" near the edge: above or below a point along it,
  // as close as it can be without covering a box (whose numbers are the point of the page);
  // a thin line joins it to the edge when it had to move away.
  function callout(edge, text, accumulate) {
    var path = edge.querySelector("path");
    if (!path || !path.getTotalLength) return;
    var group = document.createElementNS(SVG_NS, "g");
    group.setAttribute("class", "ad-callout" + (accumulate ? " accumulate" : ""));
    group.setAttribute("aria-hidden", "true");
    var leader = document.createElementNS(SVG_NS, "line");
    var rect = document.createElementNS(SVG_NS, "rect");
    var label = document.createElementNS(SVG_NS, "text");
    label.setAttribute("text-anchor", "middle");
    label.setAttribute("x", 0);
    label.setAttribute("y", 0);
    label.textContent = text;
    group.appendChild(leader);
    group.appendChild(rect);
    group.appendChild(label);
    drawing.appendChild(group);
    var size = label.getBBox();
    var width = size.width + 8, height = size.height + 4;
    var length = path.getTotalLength();
    nodeBoxes();
    var space = room();
    var best = null;
    function consider(point, along, cx, cy) {
      var place = { x: cx - width / 2, y: cy - height / 2, width: width, height: height };
      var covered = nodeBoxes().reduce(function (sum, b) { return sum + overlap(place, b); }, 0);
      var outside = width * height - overlap(place, space);  // a part the scroll box would cut off
      var distance = Math.abs(cx - point.x) + Math.abs(cy - point.y);
      var cost = (covered + outside) * 10 + distance + Math.abs(along - 0.5) * 20;
      if (best === null || cost < best.cost) {
        best = { cost: cost, point: point, cx: cx, cy: cy, place: place };
      }
    }
    [0.5, 0.35, 0.65, 0.2, 0.8].forEach(function (along) {
      var point = path.getPointAtLength(length * along);
      for (var step = 0; step < 4; step++) {
        var dy = height / 2 + 4 + step * (height + 4), dx = width / 2 + 6 + step * 12;
        consider(point, along, point.x, point.y - dy);  // above, below, then beside (top-to-bottom graphs)
        consider(point, along, point.x, point.y + dy);
        consider(point, along, point.x + dx, point.y);
        consider(point, along, point.x - dx, point.y);
      }
    });
    // The text's baseline sits below its box's middle by as much as the box's top is above 0.
    label.setAttribute("x", best.cx);
    label.setAttribute("y", best.cy - (size.y + size.height / 2));
    rect.setAttribute("x", best.place.x);
    rect.setAttribute("y", best.place.y);
    rect.setAttribute("width", width);
    rect.setAttribute("height", height);
    rect.setAttribute("rx", 3);
    var p = best.point, box = best.place;
    leader.setAttribute("x1", p.x);
    leader.setAttribute("y1", p.y);
    leader.setAttribute("x2", Math.max(box.x, Math.min(p.x, box.x + box.width)));
    leader.setAttribute("y2", Math.max(box.y, Math.min(p.y, box.y + box.height)));
  }

  function highlightUses(i) {
    mark(box[i], "ad-selected");
    (usesOf[i] || []).forEach(function (edge) { mark(edge, "ad-use"); });
  }

  function select(i) {
    selected = i;
    var node = nodes[i];
    var title = node.name + "  (" + (node.about && !node.constant ? node.about : node.kind) + ")";
    document.getElementById("node-title").textContent = title;
    var sum = document.getElementById("node-sum");
    var list = document.getElementById("node-uses");
    var total = document.getElementById("node-total");
    list.textContent = "";
    total.textContent = "";
    var gradient = "d" + data.output + "/d" + node.name + " = " + node.grad;
    if (node.constant) {
      sum.textContent = node.about.charAt(0).toUpperCase() + node.about.slice(1) + ".";
    } else if (!data.backward) {
      sum.textContent = "The backward pass is left out (--no-grad).";
    } else if (i === nodes.length - 1) {
      sum.textContent = gradient + ": the output, where the backward pass starts (the seed).";
    } else {
      var count = node.uses.length;
      var uses = count === 1 ? ", from its one use:" : ", the sum over its " + count + " uses:";
      sum.textContent = gradient + uses;
      node.uses.forEach(function (f) {
        var item = document.createElement("li");
        item.textContent = frames[f].text;
        list.appendChild(item);
      });
      if (count > 1) total.textContent = node.sum;
    }
    detail.hidden = false;
    show(position);
  }

  function unselect() {
    selected = null;
    detail.hidden = true;
    show(position);
  }

  function play() {
    if (position >= last) show(0);
    clearInterval(timer);
    timer = setInterval(function () { show(position + 1); }, 1000 / Number(speed.value));
    playButton.textContent = "Pause";
    playButton.setAttribute("aria-pressed", "true");
    playButton.setAttribute("aria-label", "pause (space)");
  }

  function pause() {
    clearInterval(timer);
    timer = null;
    playButton.textContent = "Play";
    playButton.setAttribute("aria-pressed", "false");
    playButton.setAttribute("aria-label", "play (space)");
  }

  function togglePlay() {
    if (timer === null) play(); else pause();
  }

  function scale() {
    var factor = large.checked ? 1.5 : 1;
    document.body.classList.toggle("large", large.checked);
    if (width && height) {
      svg.setAttribute("width", width * factor + unit);
      svg.setAttribute("height", height * factor + unit);
    }
  }

  document.getElementById("first").addEventListener("click", function () { show(0); });
  document.getElementById("previous").addEventListener("click", function () { show(position - 1); });
  document.getElementById("next").addEventListener("click", function () { show(position + 1); });
  document.getElementById("last").addEventListener("click", function () { show(last); });
  playButton.addEventListener("click", togglePlay);
  speed.addEventListener("change", function () { if (timer !== null) play(); });
  large.addEventListener("change", scale);
  box.forEach(function (g, i) {
    g.addEventListener("click", function () { if (selected === i) unselect(); else select(i); });
  });

  // Keys work wherever the focus is, except where a form field has a use for them: up and down
  // (and typing) in the speed list, which keeps the focus after a click, so the step keys (left,
  // right, Home, End) still step there; space on the check box.  Space on a button plays or pauses
  // instead of pressing it: Enter still presses buttons.
  var STEP_KEYS = /^(ArrowRight|ArrowLeft|Home|End)$/;
  function inField(target, key) {
    if (/^select$/i.test(target.tagName || "")) return !STEP_KEYS.test(key || "");
    return /^textarea$/i.test(target.tagName || "") ||
      (/^input$/i.test(target.tagName || "") && target.type !== "checkbox");
  }
  function onCheckBox(target) {
    return /^input$/i.test(target.tagName || "") && target.type === "checkbox";
  }
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || inField(event.target, event.key)) return;
    if (onCheckBox(event.target) && (event.key === " " || event.key === "Enter")) return;
    var handled = true;
    switch (event.key) {
      case "ArrowRight": pause(); show(position + 1); break;
      case "ArrowLeft": pause(); show(position - 1); break;
      case "Home": pause(); show(0); break;
      case "End": pause(); show(last); break;
      case " ": case "Spacebar": if (!event.repeat) togglePlay(); break;
      case "Escape": if (selected !== null) unselect(); else handled = false; break;
      case "Enter":
        var node = event.target.getAttribute && event.target.getAttribute("data-node");
        if (node !== null && node !== undefined) select(Number(node)); else handled = false;
        break;
      default: handled = false;
    }
    if (handled) event.preventDefault();
  });
  document.addEventListener("keyup", function (event) {
    // A button would otherwise be pressed by the space released after the keydown above.
    var space = event.key === " " || event.key === "Spacebar";
    if (space && !inField(event.target) && !onCheckBox(event.target)) {
      event.preventDefault();
    }
  });

  show(0);

  // The page of a tensor program: the same controls over the layer graph.  A frame lights one
  // layer (its value in the forward pass, its gradient in the backward pass) and shows that
  // tensor as a grid under the sentence; a click on a layer shows both grids and its scalar graph.
  function tensorPage(data) {
    var frames = data.frames, layers = data.layers, last = frames.length - 1;
    var svg = document.getElementById("graph").querySelector("svg");
    var box = [], edgesInto = [], edgesOutOf = [];
    Array.prototype.forEach.call(svg.querySelectorAll("[data-layer]"), function (g) {
      box[Number(g.getAttribute("data-layer"))] = g;
    });
    Array.prototype.forEach.call(svg.querySelectorAll("[data-from]"), function (g) {
      var from = Number(g.getAttribute("data-from")), to = Number(g.getAttribute("data-to"));
      (edgesInto[to] = edgesInto[to] || []).push(g);
      (edgesOutOf[from] = edgesOutOf[from] || []).push(g);
    });
    var stepText = document.getElementById("step-text"), phase = document.getElementById("phase");
    var now = document.getElementById("now");
    var stepGrid = document.getElementById("step-grid"), counter = document.getElementById("counter");
    var playButton = document.getElementById("play"), speed = document.getElementById("speed");
    var large = document.getElementById("large"), detail = document.getElementById("layer-detail");
    var width = parseFloat(svg.getAttribute("width")), height = parseFloat(svg.getAttribute("height"));
    var unit = (svg.getAttribute("width") || "").replace(/^[0-9.]+/, "");
    var position = 0, timer = null, selected = null, marked = [];

    // A tensor as a table: its numbers on their colours, or its summary when it is too large.
    function grid(view, caption) {
      var wrap = document.createElement("div");
      if (caption) {
        var head = document.createElement("p");
        head.className = "grid-caption";
        head.textContent = caption;
        wrap.appendChild(head);
      }
      if (view.rows) {
        var table = document.createElement("table");
        table.className = "grid";
        view.rows.forEach(function (row, r) {
          var line = document.createElement("tr");
          row.forEach(function (text, c) {
            var cell = document.createElement("td");
            cell.textContent = text;
            cell.style.background = view.colours[r][c];
            line.appendChild(cell);
          });
          table.appendChild(line);
        });
        wrap.appendChild(table);
      }
      if (!view.rows) {  // a grid shows every number: its summary would only repeat them
        var summary = document.createElement("p");
        summary.className = "grid-summary";
        summary.textContent = view.summary;
        wrap.appendChild(summary);
      }
      return wrap;
    }

    function mark(element, state) {
      if (!element) return;
      element.classList.add(state);
      marked.push([element, state]);
    }

    function show(k) {
      position = Math.max(0, Math.min(last, k));
      marked.forEach(function (pair) { pair[0].classList.remove(pair[1]); });
      marked = [];
      var frame = frames[position];
      var known = {};
      for (var f = 1; f <= position; f++) if (frames[f].pass === "forward") known[frames[f].layer] = true;
      var gradKnown = {};  // a layer's gradient shows in its box from its backward frame on
      for (var g = 1; g <= position; g++) if (frames[g].pass === "backward") gradKnown[frames[g].layer] = true;
      layers.forEach(function (layer, i) {
        if (!known[i]) mark(box[i], "ad-pending");
        if (!gradKnown[i]) mark(box[i], "ad-grad-pending");
      });
      stepGrid.textContent = "";
      if (frame.pass === "forward") {
        mark(box[frame.layer], "ad-current");
        (edgesInto[frame.layer] || []).forEach(function (edge) { mark(edge, "ad-flow"); });
        stepGrid.appendChild(grid(layers[frame.layer].value, layers[frame.layer].name + " " +
                                  layers[frame.layer].shape));
      } else if (frame.pass === "backward") {
        mark(box[frame.layer], "ad-receiving");
        (edgesOutOf[frame.layer] || []).forEach(function (edge) { mark(edge, "ad-now"); });
        layers[frame.layer].uses.forEach(function (use) { mark(box[use], "ad-upstream"); });
        stepGrid.appendChild(grid(layers[frame.layer].grad, "d" + data.output + "/d" + layers[frame.layer].name));
      }
      if (selected !== null) mark(box[selected], "ad-selected");
      // As on the scalar page: a box scrolled into view must stay clear of the sticky step panel.
      document.documentElement.style.scrollPaddingTop = (now.offsetHeight + 8) + "px";
      if (box[frame.layer] && position > 0 && box[frame.layer].scrollIntoView) {
        box[frame.layer].scrollIntoView({ block: "nearest", inline: "nearest" });
      }
      stepText.textContent = frame.text;
      stepText.className = frame.pass;
      phase.textContent = {
        start: "before the forward pass", forward: data.headings.forward, backward: data.headings.backward,
        end: data.backward ? "the full gradient picture" : "the forward pass is done"
      }[frame.pass];
      counter.textContent = "step " + position + " of " + last;
      if (position === last) pause();
    }

    function select(i) {
      selected = i;
      var layer = layers[i];
      document.getElementById("layer-title").textContent = layer.name + "  " + layer.shape;
      document.getElementById("layer-about").textContent = layer.about;
      var value = document.getElementById("layer-value"), grad = document.getElementById("layer-grad");
      value.textContent = "";
      grad.textContent = "";
      value.appendChild(grid(layer.value, ""));
      if (layer.grad) grad.appendChild(grid(layer.grad, ""));
      else grad.textContent = "The backward pass is left out (--no-grad).";
      document.getElementById("layer-grad-caption").textContent = "d" + data.output + "/d" + layer.name;
      var found = false;
      Array.prototype.forEach.call(document.querySelectorAll(".scalar-svg"), function (view) {
        var mine = Number(view.getAttribute("data-layer")) === i;
        view.hidden = !mine;
        found = found || mine;
      });
      document.getElementById("scalar-heading").textContent = found ? "scalar graph: " + layer.scalarTitle : "";
      document.getElementById("scalar-note").textContent = found ? "" : (layer.scalarNote ||
        (layer.kind === "input" ? "An input: its entries are the inputs of the scalar graphs of the layers " +
         "that use it." : ""));
      detail.hidden = false;
      show(position);
    }

    function unselect() {
      selected = null;
      detail.hidden = true;
      show(position);
    }

    function play() {
      if (position >= last) show(0);
      clearInterval(timer);
      timer = setInterval(function () { show(position + 1); }, 1000 / Number(speed.value));
      playButton.textContent = "Pause";
      playButton.setAttribute("aria-pressed", "true");
      playButton.setAttribute("aria-label", "pause (space)");
    }

    function pause() {
      clearInterval(timer);
      timer = null;
      playButton.textContent = "Play";
      playButton.setAttribute("aria-pressed", "false");
      playButton.setAttribute("aria-label", "play (space)");
    }

    document.getElementById("first").addEventListener("click", function () { show(0); });
    document.getElementById("previous").addEventListener("click", function () { show(position - 1); });
    document.getElementById("next").addEventListener("click", function () { show(position + 1); });
    document.getElementById("last").addEventListener("click", function () { show(last); });
    playButton.addEventListener("click", function () { if (timer === null) play(); else pause(); });
    speed.addEventListener("change", function () { if (timer !== null) play(); });
    large.addEventListener("change", function () {
      var factor = large.checked ? 1.5 : 1;
      document.body.classList.toggle("large", large.checked);
      if (width && height) {
        svg.setAttribute("width", width * factor + unit);
        svg.setAttribute("height", height * factor + unit);
      }
    });
    box.forEach(function (g, i) {
      g.addEventListener("click", function () { if (selected === i) unselect(); else select(i); });
    });
    document.addEventListener("keydown", function (event) {
      var tag = (event.target.tagName || "").toLowerCase();
      var stepKey = /^(ArrowRight|ArrowLeft|Home|End)$/.test(event.key);
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      if ((tag === "select" && !stepKey) || tag === "textarea" ||
          (tag === "input" && (event.target.type !== "checkbox" || event.key === " " || event.key === "Enter"))) {
        return;
      }
      var handled = true;
      switch (event.key) {
        case "ArrowRight": pause(); show(position + 1); break;
        case "ArrowLeft": pause(); show(position - 1); break;
        case "Home": pause(); show(0); break;
        case "End": pause(); show(last); break;
        case " ": case "Spacebar": if (!event.repeat) { if (timer === null) play(); else pause(); } break;
        case "Escape": if (selected !== null) unselect(); else handled = false; break;
        case "Enter":
          var layer = event.target.getAttribute && event.target.getAttribute("data-layer");
          if (layer !== null && layer !== undefined) select(Number(layer)); else handled = false;
          break;
        default: handled = false;
      }
      if (handled) event.preventDefault();
    });
    document.addEventListener("keyup", function (event) {
      var space = event.key === " " || event.key === "Spacebar";
      if (space && (event.target.tagName || "").toLowerCase() === "button") event.preventDefault();
    });
    show(0);
  }
})();
