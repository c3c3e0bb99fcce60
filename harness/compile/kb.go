package compile

import "strings"

// Knowledge documents (kb://<path>, readable through the MCP server's
// resources and search_knowledge) that explain what an AMD result shows.
const (
	kbWave64CDNA3  = "kb://hardware/amd/cdna3/wavefront-64-and-occupancy.md"
	kbMFMACDNA3    = "kb://hardware/amd/cdna3/mfma.md"
	kbLDSCDNA3     = "kb://hardware/amd/cdna3/lds-64kb.md"
	kbBuildGfx942  = "kb://hardware/amd/cdna3/building-for-gfx942.md"
	kbCDNA4Changes = "kb://hardware/amd/cdna4/cdna3-to-cdna4-changes.md"
	kbLDSCDNA4     = "kb://hardware/amd/cdna4/lds-160kb-and-data-movement.md"
	kbLowPrecCDNA4 = "kb://hardware/amd/cdna4/low-precision-fp4-fp6-ocp-fp8.md"
)

// seeAMD lists the documents relevant to an AMD result: wavefronts and
// occupancy always (lint findings and VGPR budgets are about them), MFMA
// when matrix instructions were emitted, LDS when the kernel uses it,
// building notes for HIP, and the CDNA4 differences for gfx950.
func seeAMD(res *Result) []string {
	cdna4 := strings.HasPrefix(res.Arch, "gfx95")
	see := []string{kbWave64CDNA3}
	lds := false
	for _, k := range res.Kernels {
		lds = lds || k.SharedStaticBytes > 0 || k.SharedDynBytes > 0
	}
	if res.AMDGCN != nil && res.AMDGCN.Classes["lds"] > 0 {
		lds = true
	}
	if res.AMDGCN != nil && res.AMDGCN.MFMA {
		see = append(see, kbMFMACDNA3)
		if cdna4 {
			see = append(see, kbLowPrecCDNA4)
		}
	}
	if lds {
		if cdna4 {
			see = append(see, kbLDSCDNA4)
		} else {
			see = append(see, kbLDSCDNA3)
		}
	}
	if res.Language != LangTriton {
		see = append(see, kbBuildGfx942)
	}
	if cdna4 {
		see = append(see, kbCDNA4Changes)
	}
	return see
}
