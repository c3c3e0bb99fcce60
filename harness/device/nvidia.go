package device

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// discoverNVIDIA reads every GPU through NVML. Every NVML call is gated behind
// a successful Init: calling into an uninitialized NVML crashes the process.
func discoverNVIDIA(libPath string) ([]GPU, string, Source) {
	var opts []nvml.LibraryOption
	if libPath != "" {
		opts = append(opts, nvml.WithLibraryPath(libPath))
	}
	lib := nvml.New(opts...)
	if ret := lib.Init(); ret != nvml.SUCCESS {
		why := "NVML init failed: " + errText(lib, ret)
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			why = "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver on this machine"
		}
		return nil, "", Source{Detail: why}
	}
	defer lib.Shutdown()

	driver, _ := lib.SystemGetDriverVersion()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, driver, Source{Detail: "NVML device count: " + errText(lib, ret)}
	}
	gpus := make([]GPU, 0, n)
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		g := GPU{Index: i, Vendor: "nvidia"}
		g.Name, _ = d.GetName()
		g.UUID, _ = d.GetUUID()
		if maj, minor, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS {
			g.ComputeCapability = fmt.Sprintf("%d.%d", maj, minor)
			g.Arch = ArchForCC(maj, minor)
		}
		// NVML has no SM-count call: derive it from the core count where the
		// driver gives one; otherwise the CUDA probe fills it in (Discover).
		if cores, ret := d.GetNumGpuCores(); ret == nvml.SUCCESS && cores > 0 {
			if per := coresPerSM(g.ComputeCapability); per > 0 {
				g.Units = cores / per
			}
		}
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemBytes = int64(mem.Total)
		}
		if c, ret := d.GetMaxClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
			g.MaxSMClockMHz = int(c)
		}
		if c, ret := d.GetMaxClockInfo(nvml.CLOCK_MEM); ret == nvml.SUCCESS {
			g.MaxMemClockMHz = int(c)
		}
		if w, ret := d.GetMemoryBusWidth(); ret == nvml.SUCCESS {
			g.MemBusWidthBits = int(w)
		}
		if p, ret := d.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
			g.PowerLimitW = float64(p) / 1000
		}
		gpus = append(gpus, g)
	}
	return gpus, driver, Source{Available: true, Detail: fmt.Sprintf("NVML: %d device(s), driver %s", len(gpus), driver)}
}

// coresPerSM is the FP32 core count per SM by compute capability.
func coresPerSM(cc string) int {
	switch cc {
	case "8.0":
		return 64
	case "9.0", "8.6", "8.7", "8.9", "10.0", "12.0":
		return 128
	}
	return 0
}

// errText is safe before a successful Init: go-nvml answers ErrorString
// without calling into the driver until the library is loaded.
func errText(lib nvml.Interface, ret nvml.Return) string {
	return lib.ErrorString(ret)
}
