package compile

import (
	"reflect"
	"testing"
)

func TestParseDiagnostics(t *testing.T) {
	cases := []struct {
		name string
		log  string
		want []Diagnostic
	}{
		{"nvcc front end with caret", "kernel.cu(3): error: identifier \"q\" is undefined\n      y[i] = q;\n             ^\n\n1 error detected",
			[]Diagnostic{{File: "kernel.cu", Line: 3, Col: 12, Severity: "error", Message: `identifier "q" is undefined`}}},
		{"nvcc numbered warning", "/tmp/x/kernel.cu(7): warning #177-D: variable \"z\" was declared but never referenced",
			[]Diagnostic{{File: "kernel.cu", Line: 7, Severity: "warning", Message: `variable "z" was declared but never referenced`}}},
		{"gcc", "kernel.c: In function 'f':\nkernel.c:4:9: error: expected ';' before '}' token\nkernel.c:2:5: note: declared here",
			[]Diagnostic{{File: "kernel.c", Line: 4, Col: 9, Severity: "error", Message: "expected ';' before '}' token"},
				{File: "kernel.c", Line: 2, Col: 5, Severity: "note", Message: "declared here"}}},
		{"ptxas", "ptxas /tmp/tmpxft_1.ptx, line 9; fatal   : Unsupported .version 9.5\nptxas info    : 0 bytes gmem\nptxas error   : Entry function 'k' uses too much shared data",
			[]Diagnostic{{File: "tmpxft_1.ptx", Line: 9, Severity: "fatal", Message: "Unsupported .version 9.5"},
				{File: "ptxas", Severity: "error", Message: "Entry function 'k' uses too much shared data"}}},
		{"nvcc fatal", "nvcc fatal   : Unsupported gpu architecture 'compute_99'",
			[]Diagnostic{{File: "nvcc", Severity: "fatal", Message: "Unsupported gpu architecture 'compute_99'"}}},
		{"header keeps its path", "/usr/include/x.h(10): error: bad",
			[]Diagnostic{{File: "/usr/include/x.h", Line: 10, Severity: "error", Message: "bad"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseDiagnostics(tc.log); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseSASSAndPtxas(t *testing.T) {
	sass := `
	code for sm_90
		Function : k
	.headerflags	@"EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                    /* 0x00000a00ff017b82 */
        /*0010*/              @!P0 LDG.E.128 R8, desc[UR4][R2.64] ;                          /* 0x0000000402087981 */
        /*0020*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;           /* 0x0000000000187981 */
        /*0030*/                   UTMALDG.2D [UR8], [UR4] ;                                 /* 0x0000000000187981 */
        /*0040*/                   STL [R1], R3 ;                                            /* 0x0000000000187981 */
        /*0050*/                   STS.128 [R0], R8 ;                                        /* 0x0000000000187981 */
        /*0060*/                   NOP ;                                                     /* 0x0000000000187981 */
        /*0070*/                   EXIT ;                                                    /* 0x0000000000187981 */
`
	per := ParseSASS(sass)
	s := per["k"]
	if s == nil {
		t.Fatalf("no function k in %v", per)
	}
	if s.Instructions != 7 || !s.TensorCore || !s.AsyncCopy || !s.Vector16Load || !s.Vector16Store || s.LocalStores != 1 {
		t.Errorf("summary = %+v", s)
	}
	if s.TensorCoreOps[0] != "HGMMA.64x128x16.F32.BF16" || s.AsyncCopyOps[0] != "UTMALDG" {
		t.Errorf("ops = %v %v", s.TensorCoreOps, s.AsyncCopyOps)
	}
	ptxas := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'b' for 'sm_90'
ptxas info    : Function properties for b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
`
	want := []Kernel{
		{Name: "a", Registers: 40, Barriers: 1, SharedStaticBytes: 4096, ConstantBytes: 368, StackFrameBytes: 8, SpillStoreBytes: 4, SpillLoadBytes: 12},
		{Name: "b", Registers: 10},
	}
	if got := ParsePtxasInfo(ptxas); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}
