package report

// Fleet is the run's fleet panel: who evaluated its nodes and how busy
// they were, and each node's result on every device kind side by side.
// nil (a run evaluated in process) draws no panel.
type Fleet struct {
	Workers    []FleetWorker
	Kinds      []string    // device kinds, the primary (fitness) first
	Nodes      []FleetNode // one row per node evaluated on several kinds
	LeasesLost int
	Requeued   int
	Crashed    int
}

// FleetWorker is one worker's share of the run.
type FleetWorker struct {
	Name        string
	Host        string
	Devices     string // e.g. "8x nvidia:sm_90"
	Evaluations int
	BusyS       float64
	Utilization float64 // 0..1
	LeasesLost  int
}

// FleetNode is one node's results by kind, in Kinds order ("" = none).
type FleetNode struct {
	ID    string
	Cells []string // e.g. "pass 1.2 ms 1.9x"
}

// UtilPct is the utilization in percent, for the template.
func (w FleetWorker) UtilPct() float64 { return 100 * w.Utilization }
