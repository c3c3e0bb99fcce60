package sandbox

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Layer is one protection around a job's candidate code.
type Layer struct {
	Name string `json:"name"`
	// Active: this host has it (doctor: the probe entered it; a result: the
	// job's process ran under it).
	Active bool   `json:"active"`
	Detail string `json:"detail,omitempty"` // what it does here, or why it is missing
	// Replaced names, for a layer the job runs without, the layers that
	// stand in for it and what they hold (the PID namespace and uid drop of
	// a GPU job whose memory crosses by torch's IPC, which fails across
	// them); "" when nothing does.
	Replaced string `json:"replaced,omitempty"`
	// Kept names, for a layer a profiled process runs without, what its
	// profiler needs of what the layer takes away; "" elsewhere.
	Kept string `json:"kept,omitempty"`
	// Without is what a host without this layer loses.
	Without string `json:"without"`
}

// Report is the sandbox as a job's process entered it (sandbox.json in the
// job's judge folder), or as doctor's probe found it.
type Report struct {
	Active  []string          `json:"active"`
	Missing map[string]string `json:"missing,omitempty"`
	Detail  map[string]string `json:"detail,omitempty"`
	// Replaced: missing layers and what stands in for each (Layer.Replaced).
	Replaced map[string]string `json:"replaced,omitempty"`
	// Kept: layers a profiled process runs without for its profiler's
	// sake, and why (Layer.Kept).
	Kept map[string]string `json:"kept,omitempty"`
}

// Layers names every layer, in the order they are applied, with what a
// host without it loses. The environment and output caps and the process
// sweep are applied by Go and the worker on every host.
var Layers = []Layer{
	{Name: "view", Without: "candidate code sees and writes the host's /tmp and /dev/shm (what it leaves there outlives the job, uncounted) and, where the Python environment sits in a closed home, runs as root: the uid drop needs the environment reachable"},
	{Name: "netns", Without: "candidate code can reach the network (exfiltrate what it reads, fetch code); Landlock's TCP rule still denies TCP where its ABI is 4 or later"},
	{Name: "pidns", Without: "a process the candidate starts with clone(CLONE_PARENT) or setsid leaves its tree: it outlives the job and runs while the judge times the reference"},
	{Name: "cgroup", Without: "nothing bounds the processes and threads a candidate starts (a fork bomb fills the host's process table) nor counts what it writes to its /tmp and /dev/shm against its memory limit (RLIMIT_AS sees no write()); its processes are killed by PID namespace and parent links only (a GPU job, which has no PID namespace, by parent links alone), and the jail has no CPU account of its own"},
	{Name: "read_only", Without: "where Landlock is missing too, candidate code that keeps the server's uid (a GPU job's, or where the uid drop failed) can write whatever that user can outside its folders: the judge's files, the shared caches, the Python environment"},
	{Name: "uid", Without: "a server running as root runs candidates as uid 0 (with no capabilities): root-owned files that only their owner may read (/etc/shadow, ~root) are readable to them"},
	{Name: "capabilities", Without: "a root candidate keeps every capability: it can undo the other layers"},
	{Name: "no_new_privs", Without: "setuid programs can give candidate code privileges back; Landlock and seccomp cannot be entered unprivileged"},
	{Name: "landlock", Without: "candidate code can write, delete or replace any file the server's user can: the judge's files, the reference's folder, ~, shared caches"},
	{Name: "build_cache", Without: "the shared build caches (kevolve loaders, load_inline) stay writable by candidate code, as before the sandbox: a candidate can plant a build that a later evaluation of the same source loads"},
	{Name: "seccomp", Without: "candidate code can ptrace or process_vm_writev other processes of its user (the warm parent, the judge) where Landlock does not scope ptrace"},
	{Name: "env", Without: "(always active) tokens and API keys in the server's environment would reach candidate code"},
	{Name: "subreaper", Without: "a setsid or double-forked daemon of a candidate escapes the sweep at the end of its job and outlives it"},
	{Name: "output_cap", Without: "(always active) a candidate's output would fill the disk and the server's memory"},
}

// goLayers describe the layers Go applies on every host.
var goLayers = map[string]string{
	"env":        "allowlisted environment: tokens, API keys and the user's other variables dropped",
	"output_cap": "candidate output capped at 16 MiB on disk, read as head and tail",
}

// Merge fills Layers' activity from a report; env and output_cap are
// Go's own and always active.
func (r Report) Merge() []Layer {
	active := map[string]bool{"env": true, "output_cap": true}
	for _, n := range r.Active {
		active[n] = true
	}
	out := make([]Layer, 0, len(Layers))
	for _, l := range Layers {
		l.Active = active[l.Name]
		if l.Active {
			l.Detail = r.Detail[l.Name]
			if l.Detail == "" {
				l.Detail = goLayers[l.Name]
			}
		} else {
			l.Detail = r.Missing[l.Name]
			if l.Detail == "" {
				l.Detail = r.Missing["all"]
			}
			l.Replaced = r.Replaced[l.Name]
			l.Kept = r.Kept[l.Name]
		}
		out = append(out, l)
	}
	return out
}

// WriteTable prints layers as doctor shows them: one line each, and for a
// missing one, what stands in for it or else what the host loses.
func WriteTable(w io.Writer, layers []Layer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SANDBOX LAYER\tSTATE\tDETAIL")
	for _, l := range layers {
		state := "active"
		switch {
		case l.Active:
		case l.Replaced != "":
			state = "replaced"
		default:
			state = "MISSING"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, state, oneLine(l.Detail))
		switch {
		case l.Active:
		case l.Replaced != "":
			fmt.Fprintf(tw, "\t\tinstead: %s\n", oneLine(l.Replaced))
		default:
			fmt.Fprintf(tw, "\t\twithout it: %s\n", l.Without)
		}
	}
	return tw.Flush()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// Profiled is the jail of a process a profiler launches, as the profilers
// named get it (sandbox/profiled.py): its layers, merged as a job's.
type Profiled struct {
	Profilers string  `json:"profilers"`
	Layers    []Layer `json:"layers"`
}

// WriteProfiledTable prints the profiled processes' jails beside each
// other: each layer's state under each kind of profiler, and for one that
// is not active, why (what stands in for it, what the profiler needs, or
// what the host loses).
func WriteProfiledTable(w io.Writer, jails []Profiled) error {
	if len(jails) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "PROFILED PROCESS"
	for _, j := range jails {
		head += "\t" + strings.ToUpper(j.Profilers)
	}
	fmt.Fprintln(tw, head+"\tWHY NOT ACTIVE")
	for i, l := range jails[0].Layers {
		row, seen := l.Name, map[string]bool{}
		var whys []string
		for _, j := range jails {
			state, why := profiledState(j.Layers[i])
			row += "\t" + state
			if why != "" && !seen[why] {
				seen[why] = true
				whys = append(whys, why)
			}
		}
		fmt.Fprintln(tw, row+"\t"+oneLine(strings.Join(whys, "; ")))
	}
	return tw.Flush()
}

// profiledState is a layer's state in a profiled process's jail and, where
// it is not active, why.
func profiledState(l Layer) (state, why string) {
	switch {
	case l.Active:
		return "active", ""
	case l.Replaced != "":
		return "replaced", "instead: " + l.Replaced
	case l.Kept != "":
		return "kept out", "for the profiler: " + l.Kept
	}
	return "MISSING", "without it: " + cmp.Or(l.Detail, l.Without)
}
