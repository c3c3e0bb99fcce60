package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/device"
)

// DeviceInfoInput is device_info's arguments.
type DeviceInfoInput struct {
	Refresh bool `json:"refresh,omitempty" jsonschema:"Discover again instead of answering from the cache (the torch probe takes seconds)."`
}

// DeviceInfo returns the device_info tool: the accelerators, CPU and
// toolchains found, each GPU matched to its spec-table row.
func DeviceInfo(devices *device.Cache) server.ServerTool {
	tool := mcp.NewTool("device_info",
		mcp.WithDescription("Use first, to learn what this server can run kernels on: targets (what run_kernel accepts); GPUs (name, UUID, compute capability, SMs/CUs, "+
			"memory, clocks) each matched to the hardware spec table (peak FLOP/s per dtype, memory bandwidth, L2, shared memory); the CPU (cores, ISA); "+
			"toolchains (nvcc, ncu, hipcc, gcc) and the Python with torch/triton. target_table says how each target is driven (torch device, the "+
			"visible-devices variable, kernel languages, profilers, arch names); problems: the bundled problems evolve_start and run_kernel take that have a "+
			"start kernel for a target here (problem://NAME/reference.py shows one). Missing pieces say why."),
		mcp.WithInputSchema[DeviceInfoInput](),
		outputSchema[DeviceInfoOutput](),
		mcp.WithTitleAnnotation("Device and toolchain discovery"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, _ mcp.CallToolRequest, in DeviceInfoInput) (*mcp.CallToolResult, error) {
		if devices == nil {
			return toolErrorf("device_info is not available: the server was built without device discovery"), nil
		}
		r := devices.Get(ctx, in.Refresh)
		return structured(DeviceInfoOutput{Report: r, Problems: problemsHere(r)}), nil
	})}
}
