package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search/fleet"
)

func init() { register(newWorkerCmd) }

// newWorkerCmd is `kevolve-mcp worker`: a long-lived fleet worker (the
// work is search/fleet's ServeWorker), plus `worker manifest k8s`.
func newWorkerCmd(c *cli) *cobra.Command {
	var o fleet.WorkerOptions
	cmd := &cobra.Command{
		Use:   "worker --coordinator URL [--token T] [--target auto|nvidia|amd|cpu]",
		Short: "Evaluate a search's kernels for a coordinator (one worker per host, every device)",
		Long: `Serve a fleet coordinator (an evolve run started with --listen or --workers):
start the local evaluation service, register this host's devices, claim one
evaluation per idle device with a lease kept alive by heartbeats, and report the
results. SIGTERM drains: running evaluations finish (within --drain) or are
released to other workers. Candidate code runs only inside the harness's
sandboxed Python children.

The token comes from --token or KEVOLVE_TOKEN (launchers use the variable, so
it never shows in a process list).`,
		Example: `  KEVOLVE_TOKEN=... kevolve-mcp worker --coordinator http://head:8787
  kevolve-mcp worker --coordinator http://127.0.0.1:8787 --target cpu --slots 3
  kevolve-mcp worker manifest k8s --coordinator http://head:8787 --replicas 4 --gpus 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Token == "" {
				o.Token = os.Getenv("KEVOLVE_TOKEN")
			}
			a := c.host()
			defer a.Close()
			ctx, cancel := signalContext()
			defer cancel()
			o.Python, o.Log, o.HostMemLimit = a.Python(), c.logger, harness.HostMemLimitGiB(c.g.hostMemGiB)
			o.Ceilings = a.MeasuredCeilings(ctx)
			return fleet.ServeWorker(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Coordinator, "coordinator", "", "the coordinator's `URL` (http://HOST:PORT)")
	f.StringVar(&o.Token, "token", "", "bearer `token` (default $KEVOLVE_TOKEN)")
	f.StringVar(&o.Name, "name", "", "this worker's `name` in status and reports (default: the host name)")
	f.StringVar(&o.Target, "target", "auto", "devices to offer: auto (every GPU, else the CPU), nvidia, amd or cpu")
	f.IntVar(&o.Slots, "slots", 0, "cpu: concurrent evaluation slots (default 1); GPU: use at most `N` GPUs (default all)")
	f.IntVar(&o.JobsPerDevice, "jobs-per-device", 0, "GPU: evaluations run on one GPU at once, their builds overlapping its device phase (default: as the in-process service, the host's cores shared among its GPUs, 6 to 24)")
	f.DurationVar(&o.Drain, "drain", 30*time.Second, "on SIGTERM, let running evaluations finish for this long before releasing them")
	f.StringVar(&o.Share, "share", "", "`I/N`: keep the GPUs whose index is I modulo N (local:N workers split a host's GPUs)")
	_ = cmd.MarkFlagRequired("coordinator")
	_ = cmd.RegisterFlagCompletionFunc("target", fixedCompletion("auto", "nvidia", "amd", "cpu"))
	cmd.AddCommand(newWorkerManifestCmd())
	return cmd
}

func newWorkerManifestCmd() *cobra.Command {
	var o fleet.ManifestOptions
	cmd := &cobra.Command{
		Use:   "manifest k8s --coordinator URL [--replicas N] [--gpus K]",
		Short: "Print a Kubernetes StatefulSet (or Job) that runs fleet workers",
		Long: `Print a Kubernetes manifest for fleet workers: a StatefulSet (or a Job) of
worker pods spread one per node, each with --gpus GPUs, the token read from the
Secret the header comment names. Apply it with kubectl where a cluster exists.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"k8s"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "k8s" {
				return fmt.Errorf("worker manifest: %q: only k8s is generated", args[0])
			}
			m, err := fleet.Manifest(o)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), m)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Coordinator, "coordinator", "", "the `URL` pods reach the coordinator at")
	f.StringVar(&o.Name, "name", "kevolve", "resource name prefix")
	f.StringVar(&o.Namespace, "namespace", "default", "Kubernetes namespace")
	f.StringVar(&o.Kind, "kind", "StatefulSet", "StatefulSet (long-lived workers) or Job")
	f.IntVar(&o.Replicas, "replicas", 1, "workers (spread one per node)")
	f.IntVar(&o.GPUs, "gpus", 0, "GPUs per worker (0 = a CPU worker)")
	f.StringVar(&o.GPUResource, "gpu-resource", "nvidia.com/gpu", "GPU resource name (amd.com/gpu for AMD)")
	f.StringVar(&o.Image, "image", fleet.DefaultImage, "container image with kevolve-mcp and a Python with torch")
	f.StringArrayVar(&o.WorkerArgs, "worker-arg", nil, "extra worker flag (repeatable), e.g. --worker-arg=--target --worker-arg=nvidia")
	_ = cmd.MarkFlagRequired("coordinator")
	return cmd
}
