// Problem layout (corpus/problems/<family>/<name>/):
//
//	reference.py     KernelBench format: class Model(nn.Module), get_inputs(),
//	                 get_init_inputs(); inputs drawn on the CPU with torch.randn /
//	                 randint (never zeros). A module-level SHAPES dict maps a shape
//	                 set to its variables and env KEVOLVE_SHAPES picks one:
//	                 "large" (default, fills an H100) or "small" (CPU, well under a
//	                 second). DTYPES does the same for dtype where the sets differ.
//	meta.yaml        name, family, description, dtype (a string, or a map from shape
//	                 set to dtype), optional tolerance {atol, rtol}, flops and bytes
//	                 as formulas over the shape variables and elem_bytes, the
//	                 element size of the set's dtype (see FormulaValue and
//	                 FormulaVars: one formula serves a bf16 and an fp32 set), shapes (must
//	                 equal the reference's SHAPES; a test checks), tags, starts (a
//	                 list of kinds: cuda, c, triton) and optional notes.
//	start_cuda.py    ModelNew using kevolve.load_cuda (fp32 and bf16 entry points
//	                 where the large set is bf16).
//	start_c.py       ModelNew using kevolve.load_c, for the CPU small set.
//	start_triton.py  ModelNew with Triton kernels, where natural.
//
// Every start defines _kernels(), which compiles (and caches) its kernels; the
// tests use it to compile CUDA starts without a GPU.

package corpus
