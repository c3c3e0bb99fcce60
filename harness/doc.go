// Package harness compiles, runs, checks and times kernels on the devices it
// finds. It knows nothing about MCP: the tools package calls into it.
package harness
