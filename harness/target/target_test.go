package target

import "testing"

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    Name
		wantErr bool
	}{
		{"", Auto, false}, {"auto", Auto, false}, {"nvidia", NVIDIA, false}, {"CUDA", NVIDIA, false},
		{"amd", AMD, false}, {"rocm", AMD, false}, {"hip", AMD, false}, {"cpu", CPU, false},
		{" Cpu ", CPU, false}, {"tpu", "", true}, {"metal", "", true}, {"gpu", "", true},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("Parse(%q) = %q, %v; want %q (error %v)", c.in, got, err, c.want, c.wantErr)
		}
	}
	if _, err := Parse("tpu"); err == nil || err.Error() != `unknown target "tpu" (use nvidia, amd, cpu or auto)` {
		t.Errorf("error names the accepted targets: %v", err)
	}
}

func TestTable(t *testing.T) {
	want := map[Name]struct {
		torch, env, lang, prof, arch string
	}{
		NVIDIA: {"cuda", "CUDA_VISIBLE_DEVICES", LangCUDA, "ncu", "sm_90"},
		AMD:    {"cuda", "HIP_VISIBLE_DEVICES", LangHIP, "rocprofv3", "gfx942"},
		CPU:    {"cpu", "", LangC, "torch.profiler", ""},
	}
	if len(All()) != len(want) {
		t.Fatalf("table has %d rows, want %d", len(All()), len(want))
	}
	for n, w := range want {
		tg := MustGet(n)
		if tg.TorchDevice != w.torch || tg.VisibleDevices != w.env || !tg.Compiles(w.lang) || tg.Profilers[0] != w.prof || tg.ArchExample != w.arch {
			t.Errorf("%s: %+v", n, tg)
		}
	}
	if MustGet(CPU).Compiles(LangCUDA) || MustGet(NVIDIA).Compiles(LangHIP) || MustGet(AMD).Compiles(LangCUDA) {
		t.Error("a target claims a language it cannot compile")
	}
	for _, c := range []struct {
		n         Name
		cap, arch string
	}{{NVIDIA, "9.0", "sm_90"}, {NVIDIA, "sm_89", "sm_89"}, {AMD, "gfx942", "gfx942"}, {AMD, "950", "gfx950"}, {CPU, "x", ""}} {
		if got := MustGet(c.n).Arch(c.cap); got != c.arch {
			t.Errorf("%s.Arch(%q) = %q, want %q", c.n, c.cap, got, c.arch)
		}
	}
}

func TestDefaultsAndParseTarget(t *testing.T) {
	for _, c := range []struct {
		in, lang, shapes string
		gpu              bool
	}{{"nvidia", LangCUDA, "large", true}, {"cuda", LangCUDA, "large", true}, {"amd", LangHIP, "large", true}, {"rocm", LangHIP, "large", true}, {"cpu", LangC, "small", false}} {
		tg, err := ParseTarget(c.in)
		if err != nil {
			t.Fatalf("ParseTarget(%q): %v", c.in, err)
		}
		if tg.DefaultLanguage() != c.lang || tg.DefaultShapes() != c.shapes || tg.GPU() != c.gpu || !tg.Compiles(c.lang) {
			t.Errorf("%s: language %s shapes %s gpu %v", c.in, tg.DefaultLanguage(), tg.DefaultShapes(), tg.GPU())
		}
	}
	for _, bad := range []string{"", "auto", "tpu"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}
