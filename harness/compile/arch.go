package compile

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// AMD GPU architectures are named by their LLVM processor: gfx90a (MI200,
// CDNA2), gfx942 (MI300X/MI325X, CDNA3), gfx950 (MI350X/MI355X, CDNA4), and
// gfx1100-style names for RDNA parts.
var amdArchRE = regexp.MustCompile(`^gfx[0-9]{1,2}[0-9a-f]{2}$`)

// IsAMDArch reports whether arch names an AMD GPU (gfx942...), as opposed to
// an NVIDIA one (sm_90).
func IsAMDArch(arch string) bool { return amdArchRE.MatchString(arch) }

// validArch checks an arch's spelling for either vendor.
func validArch(arch string) error {
	if archRE.MatchString(arch) || amdArchRE.MatchString(arch) {
		return nil
	}
	return fmt.Errorf("arch %q is neither an NVIDIA arch (sm_90, sm_90a, sm_100a) nor an AMD one (gfx90a, gfx942, gfx950)", arch)
}

// WavefrontSize is the number of lanes of one wavefront on an AMD arch: 64
// on GCN and CDNA (gfx9xx), 32 by default on RDNA (gfx10xx and later).
func WavefrontSize(arch string) int {
	if strings.HasPrefix(arch, "gfx9") {
		return 64
	}
	return 32
}

// isaVersion is the ROCm device libraries' __oclc_ISA_version of an arch:
// major*1000 + minor*100 + stepping, with a hex stepping (gfx90a -> 9010).
func isaVersion(arch string) int {
	s := strings.TrimPrefix(arch, "gfx")
	if len(s) < 3 {
		return 0
	}
	major, err := strconv.Atoi(s[:len(s)-2])
	if err != nil {
		return 0
	}
	minor, err1 := strconv.ParseInt(s[len(s)-2:len(s)-1], 16, 32)
	step, err2 := strconv.ParseInt(s[len(s)-1:], 16, 32)
	if err1 != nil || err2 != nil {
		return 0
	}
	return major*1000 + int(minor)*100 + int(step)
}
