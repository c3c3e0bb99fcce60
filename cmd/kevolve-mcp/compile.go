package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kevolve/kevolve-mcp/harness/compile"
	"github.com/kevolve/kevolve-mcp/tools"
)

func init() { register(newCompileCmd) }

// newCompileCmd is the compile_kernel tool from a shell: the same arguments,
// the same checks, the same result (a table, or with --json the tool's JSON).
func newCompileCmd(c *cli) *cobra.Command {
	var (
		in        tools.CompileKernelInput
		constants map[string]string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "compile --lang cuda|c|triton|hip [--arch ARCH] FILE",
		Short: "Compile one bare kernel without running it: diagnostics, registers, spills, instruction mix",
		Long: `Compile one bare kernel source without running it, as the compile_kernel tool
does, and report what decides its speed before it is timed: diagnostics with
file:line:col, per-kernel registers, shared memory, stack and spills, and the
instruction mix (tensor-core, 16-byte and async-copy instructions). No GPU is
needed: --arch picks the target (sm_90, sm_100a; gfx942 where the AMD backend
is present). Exits 1 when the kernel does not compile.`,
		Example: `  kevolve-mcp compile --lang cuda --arch sm_90 kernel.cu
  kevolve-mcp compile --lang c kernel.c --json
  kevolve-mcp compile --lang triton --arch gfx942 --constant BLOCK=1024 kernel.py`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("want one source FILE, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if in.Language == "" {
				return errors.New("compile: --lang is required: cuda, c, triton or hip")
			}
			in.Path = args[0]
			in.Constants = map[string]any{}
			for k, v := range constants {
				in.Constants[k] = constantValue(v)
			}
			req, msg := tools.CompileRequest(in)
			if msg != "" {
				return fmt.Errorf("compile: %s", msg)
			}
			ctx, cancel := signalContext()
			defer cancel()
			res, err := compile.Compile(ctx, req)
			if err != nil {
				return err
			}
			if asJSON {
				err = printJSON(cmd.OutOrStdout(), res)
			} else {
				err = compile.WriteTable(cmd.OutOrStdout(), res)
			}
			if err != nil {
				return err
			}
			if !res.OK {
				return fmt.Errorf("compile: %s (%d diagnostics)", res.Status, len(res.Diagnostics))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.Language, "lang", "", "source language: cuda (nvcc), c (gcc), triton or hip")
	f.StringVar(&in.Arch, "arch", "", "target architecture, e.g. sm_90, sm_90a, gfx942 (default: the detected GPU's, else sm_90; ignored for c)")
	f.StringArrayVar(&in.Flags, "flag", nil, "extra compiler `flag` appended to the command line (repeatable), e.g. --flag=-use_fast_math")
	f.Float64Var(&in.TimeoutS, "timeout", 0, "compile time limit in `seconds` (default 120, at most 600)")
	f.StringVar(&in.Kernel, "kernel", "", "triton: the @triton.jit `function` to compile (default: the last one defined)")
	f.StringToStringVar(&in.Signature, "signature", nil, "triton: parameter types, e.g. x_ptr=*bf16,n=i32")
	f.StringToStringVar(&constants, "constant", nil, "triton: constexpr values, e.g. BLOCK=1024 (repeatable)")
	f.IntVar(&in.NumWarps, "num-warps", 0, "triton: num_warps (default 4)")
	f.IntVar(&in.NumStages, "num-stages", 0, "triton: num_stages (default Triton's)")
	f.StringSliceVar(&in.Divisible16, "divisible16", nil, "triton: integer parameters that are multiples of 16 at run time")
	f.BoolVar(&asJSON, "json", false, "print the structured result the compile_kernel tool returns")
	_ = cmd.RegisterFlagCompletionFunc("lang", fixedCompletion("cuda", "c", "triton", "hip"))
	_ = cmd.RegisterFlagCompletionFunc("arch", fixedCompletion("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "gfx90a", "gfx942", "gfx950"))
	return cmd
}

// constantValue reads a --constant value as JSON where it is one (1024,
// true, 0.5), else as a string, so BLOCK=1024 reaches Triton as an int.
func constantValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		if f, ok := v.(float64); ok && f == float64(int64(f)) && !strings.ContainsAny(s, ".eE") {
			return int64(f)
		}
		return v
	}
	return s
}
