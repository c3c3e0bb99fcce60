"""split_bindings: which CUDA sources have their pybind11 block moved to
main.cpp, and what main.cpp then declares."""

import unittest

from kevolve._bindings import blank_comments_and_strings, split_bindings

_CU = r'''
#include <torch/extension.h>
#define CHECK(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor"); \
    TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
// torch::Tensor forward(torch::Tensor x) { a comment, not a definition }
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor
forward(torch::Tensor x, double alpha = 1.0) {
    CHECK(x);
    auto y = torch::empty_like(x);
    relu_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
std::vector<torch::Tensor> both(const torch::Tensor& a) { return {a, forward(a)}; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward", &forward, "ReLU (CUDA); {braces} in a docstring");
    m.def("both", both);
}
'''


class SplitBindings(unittest.TestCase):
    def test_plain_block_moves_with_declarations(self):
        cuda, cpp = split_bindings(_CU, "torch::Tensor other(torch::Tensor x);")
        self.assertEqual(len(cuda), 1)
        self.assertNotIn("PYBIND11_MODULE", cuda[0])
        self.assertIn("relu_kernel<<<", cuda[0], "the kernels and functions stay")
        self.assertEqual(cpp[0], "torch::Tensor other(torch::Tensor x);", "the candidate's own C++ comes first")
        moved = cpp[1]
        self.assertIn("torch::Tensor forward(torch::Tensor x, double alpha = 1.0);", moved)
        self.assertIn("std::vector<torch::Tensor> both(const torch::Tensor& a);", moved)
        self.assertIn('m.def("forward", &forward, "ReLU (CUDA); {braces} in a docstring");', moved)
        self.assertLess(moved.index("both(const"), moved.index("PYBIND11_MODULE"), "declared before bound")

    def test_anything_but_plain_defs_stays_as_written(self):
        cases = {
            "py::arg": _CU.replace('m.def("both", both);', 'm.def("both", both, py::arg("a"));'),
            "a lambda": _CU.replace('m.def("both", both);', 'm.def("both", [](torch::Tensor a) { return a; });'),
            "static function": _CU.replace("torch::Tensor\nforward(", "static torch::Tensor\nforward("),
            "template": _CU.replace("std::vector<torch::Tensor> both(", "template <int N> std::vector<torch::Tensor> both("),
            "in a namespace": _CU.replace("std::vector<torch::Tensor> both(const torch::Tensor& a) { return {a, forward(a)}; }",
                                          "namespace k { std::vector<torch::Tensor> both(const torch::Tensor& a) { return {a}; } }"),
            "overloaded": _CU.replace("std::vector<torch::Tensor> both(", "int both(int a) { return a; }\nstd::vector<torch::Tensor> both("),
            "bound but not defined here": _CU.replace('m.def("both", both);', 'm.def("both", both);\n    m.def("gone", &gone);'),
            "two blocks": _CU + _CU[_CU.index("PYBIND11_MODULE"):],
            "no block": _CU[:_CU.index("PYBIND11_MODULE")],
        }
        for why, src in cases.items():
            with self.subTest(why):
                self.assertNotEqual(src, _CU)
                self.assertIsNone(split_bindings(src, ""))

    def test_blanking_keeps_offsets(self):
        text = 'a /* x { */ "s { \\" }" // c {\n\'{\' b'
        blank = blank_comments_and_strings(text)
        self.assertEqual(len(blank), len(text))
        self.assertNotIn("{", blank)
        self.assertEqual(blank.index("b"), text.index(" b") + 1)


if __name__ == "__main__":
    unittest.main()
