"""Captures a model's forward through TorchDynamo, the front end of
torch.compile, so any model torch.compile runs is seen whole: data-dependent
Python, math on sizes and unsupported calls become graph breaks (reported
with their cause) instead of a failed trace, and the code between the
captured graphs still counts as time, "not captured".

A recording backend keeps each graph Dynamo hands it (torch-level ops, the
model's parameters as graph inputs) and runs it through an interpreter
that, on the first call, keeps every node's value (the regions' problems
are written from them) and, when asked, wraps each node in a profiler
label. A graph Dynamo reuses (the same block code over several layers)
is one graph called several times a forward.

Labels: "kvf" around the whole forward, "kvg:<g>" around one call of graph
g, "kvn:<g>:<node>" around one node. Nodes are timed on one profiled run
and graphs and forwards on another, where each graph runs its own code
rather than the interpreter, so the interpreter's and the labels' own cost
is not counted as the model's."""
import torch
import torch.fx as fx

from torch._dynamo.utils import counters


class Graph:
    """One captured graph: the GraphModule, the root qualname of each
    placeholder that is a parameter or buffer of the model (by identity, on
    the first call), the first call's values by node, and its call count."""

    def __init__(self, index, gm, named):
        self.index, self.gm, self._named = index, gm, named
        self.qualname = {}
        self.values = {}
        self.calls = 0
        self.label = ""  # "nodes" | "graph" | "" (see Capture.labelled)

    def __call__(self, *args):
        self.calls += 1
        if not self.values:
            return self._record(args)
        if self.label == "nodes":
            return _Labelled(self.gm, self.index).run(*args)
        if self.label == "graph":
            with torch.profiler.record_function("kvg:%d" % self.index):
                return self.gm.forward(*args)
        return self.gm.forward(*args)

    def _record(self, args):
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, a in zip(placeholders, args):
            q = self._named.get(id(a)) if isinstance(a, torch.Tensor) else None
            if q is not None:
                self.qualname[n] = q
        rec = _Recorder(self.gm)
        out = rec.run(*args)
        self.values = rec.values
        return out

    def is_weight(self, n):
        return n in self.qualname


class _Recorder(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        v = super().run_node(n)
        self.values[n] = v
        return v


class _Labelled(fx.Interpreter):
    def __init__(self, gm, index):
        super().__init__(gm)
        self.prefix = "kvn:%d:" % index

    def run_node(self, n):
        if n.op in ("placeholder", "output", "get_attr"):
            return super().run_node(n)
        with torch.profiler.record_function(self.prefix + n.name):
            return super().run_node(n)


def _break_causes():
    """[{cause, detail, count}] of the graph breaks Dynamo counted: the
    first line of its explanation and its developer context."""
    out = []
    for key in ("graph_break", "unimplemented"):
        for msg, count in counters.get(key, {}).items():
            lines = [x.strip() for x in str(msg).splitlines() if x.strip()]
            cause = lines[0] if lines else str(msg)
            detail = ""
            for x in lines:
                if x.startswith("Explanation:"):
                    detail = x[len("Explanation:"):].strip()
                if x.startswith("Developer debug context:"):
                    detail = (detail + " (" + x.split(":", 1)[1].strip() + ")").strip()
            if not any(b["cause"] == cause and b["detail"] == detail for b in out):
                out.append({"cause": cause, "detail": detail[:400], "count": int(count)})
    return out


class Capture:
    """The captured graphs of one model and the breaks between them."""

    def __init__(self, model):
        import torch._dynamo as dynamo
        dynamo.reset()
        counters.clear()
        self.graphs = []
        named = {id(t): q for q, t in list(model.named_parameters()) + list(model.named_buffers())}

        def backend(gm, example_inputs):
            g = Graph(len(self.graphs), gm, named)
            self.graphs.append(g)
            return g

        self.model = model
        self.compiled = torch.compile(model, backend=backend, dynamic=False)
        self.breaks = []

    def first_call(self, inputs):
        """Captures (and records) on one real forward; returns its output."""
        with torch.no_grad():
            out = self.compiled(*inputs)
        self.breaks = _break_causes()
        return out

    def labelled(self, how):
        """Labels on each node ("nodes": the interpreter runs the graph, so
        it times nodes, not the graph), around each graph call ("graph":
        the graph's own code runs, as it would unprofiled) or none ("")."""
        for g in self.graphs:
            g.label = how

    def reset_calls(self):
        for g in self.graphs:
            g.calls = 0


def capture(model, inputs):
    """A Capture of model after one real forward on inputs."""
    c = Capture(model)
    c.first_call(inputs)
    return c
