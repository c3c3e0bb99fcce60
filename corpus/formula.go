package corpus

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// FormulaValue computes a FLOP or byte formula such as
// "2*B*D*elem_bytes + D*elem_bytes" over the variables of one shape set
// (Problem.FormulaVars gives them, element size included). It is a deliberately tiny language (numbers,
// variables, + - * / **, parentheses, min, max, ceil, floor, log2, sqrt) so that formulas
// from metadata, which may come from anyone, can never run code.
func FormulaValue(formula string, vars map[string]float64) (float64, error) {
	toks, err := tokenize(formula)
	if err != nil {
		return 0, fmt.Errorf("formula %q: %w", formula, err)
	}
	p := &parser{toks: toks, vars: vars}
	v, err := p.expr()
	if err != nil {
		return 0, fmt.Errorf("formula %q: %w", formula, err)
	}
	if p.pos != len(p.toks) {
		return 0, fmt.Errorf("formula %q: unexpected %q at offset %d", formula, p.toks[p.pos].text, p.toks[p.pos].off)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("formula %q: result is %v", formula, v)
	}
	return v, nil
}

// ElemBytesVar is the variable every formula may use for the element size
// of its shape set's dtype, so that one byte formula is right for a bf16
// large set and an fp32 small set alike. No shape variable may take its name.
const ElemBytesVar = "elem_bytes"

// elemBytes are the sizes of the dtypes problems declare.
var elemBytes = map[string]float64{
	"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2, "int64": 8, "int32": 4, "int8": 1, "uint8": 1,
}

// ElemBytes returns the size in bytes of one element of dtype (a torch name:
// bfloat16, float32, ...).
func ElemBytes(dtype string) (float64, bool) {
	b, ok := elemBytes[dtype]
	return b, ok
}

// FormulaVars returns the variables the problem's formulas are computed with
// for shapeSet: its shape variables plus elem_bytes of the set's dtype.
func (p Problem) FormulaVars(shapeSet string) (map[string]float64, error) {
	shapes, ok := p.Shapes[shapeSet]
	if !ok {
		return nil, fmt.Errorf("problem %s has no shape set %q", p.Name, shapeSet)
	}
	dt := p.DtypeFor(shapeSet)
	eb, ok := ElemBytes(dt)
	if !ok {
		return nil, fmt.Errorf("problem %s: shape set %q has dtype %q of unknown element size", p.Name, shapeSet, dt)
	}
	vars := make(map[string]float64, len(shapes)+1)
	for k, v := range shapes {
		vars[k] = v
	}
	vars[ElemBytesVar] = eb
	return vars, nil
}

type tokKind int

const (
	tNum tokKind = iota
	tIdent
	tOp // + - * / ** ( ) ,
)

type token struct {
	kind tokKind
	text string
	num  float64
	off  int
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == '_') {
				j++
			}
			// Exponent part: 1e6, 2.5E-3.
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && s[k] >= '0' && s[k] <= '9' {
					for k < len(s) && s[k] >= '0' && s[k] <= '9' {
						k++
					}
					j = k
				}
			}
			f, err := strconv.ParseFloat(strings.ReplaceAll(s[i:j], "_", ""), 64)
			if err != nil {
				return nil, fmt.Errorf("bad number %q at offset %d", s[i:j], i)
			}
			out = append(out, token{kind: tNum, text: s[i:j], num: f, off: i})
			i = j
		case c == '_' || unicode.IsLetter(c):
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{kind: tIdent, text: s[i:j], off: i})
			i = j
		case c == '*' && i+1 < len(s) && s[i+1] == '*':
			out = append(out, token{kind: tOp, text: "**", off: i})
			i += 2
		case strings.ContainsRune("+-*/(),", c):
			out = append(out, token{kind: tOp, text: string(c), off: i})
			i++
		default:
			return nil, fmt.Errorf("unexpected character %q at offset %d", c, i)
		}
	}
	return out, nil
}

type parser struct {
	toks  []token
	pos   int
	vars  map[string]float64
	depth int
}

func (p *parser) peekOp(op string) bool {
	return p.pos < len(p.toks) && p.toks[p.pos].kind == tOp && p.toks[p.pos].text == op
}

func (p *parser) expect(op string) error {
	if !p.peekOp(op) {
		if p.pos < len(p.toks) {
			return fmt.Errorf("expected %q at offset %d, got %q", op, p.toks[p.pos].off, p.toks[p.pos].text)
		}
		return fmt.Errorf("expected %q at end of formula", op)
	}
	p.pos++
	return nil
}

// expr := term (('+'|'-') term)*
func (p *parser) expr() (float64, error) {
	// Bound recursion so a pathological formula cannot blow the stack.
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 200 {
		return 0, fmt.Errorf("formula nested too deeply")
	}
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for p.peekOp("+") || p.peekOp("-") {
		op := p.toks[p.pos].text
		p.pos++
		r, err := p.term()
		if err != nil {
			return 0, err
		}
		if op == "+" {
			v += r
		} else {
			v -= r
		}
	}
	return v, nil
}

// term := unary (('*'|'/') unary)*
func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for p.peekOp("*") || p.peekOp("/") {
		op := p.toks[p.pos].text
		off := p.toks[p.pos].off
		p.pos++
		r, err := p.unary()
		if err != nil {
			return 0, err
		}
		if op == "*" {
			v *= r
		} else {
			if r == 0 {
				return 0, fmt.Errorf("division by zero at offset %d", off)
			}
			v /= r
		}
	}
	return v, nil
}

// unary := ('-'|'+') unary | power. As in Python, -2**2 is -(2**2).
func (p *parser) unary() (float64, error) {
	if p.peekOp("-") || p.peekOp("+") {
		neg := p.toks[p.pos].text == "-"
		p.pos++
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > 200 {
			return 0, fmt.Errorf("formula nested too deeply")
		}
		v, err := p.unary()
		if neg {
			v = -v
		}
		return v, err
	}
	return p.power()
}

// power := atom ('**' unary)?   (right-associative)
func (p *parser) power() (float64, error) {
	v, err := p.atom()
	if err != nil {
		return 0, err
	}
	if p.peekOp("**") {
		p.pos++
		e, err := p.unary()
		if err != nil {
			return 0, err
		}
		return math.Pow(v, e), nil
	}
	return v, nil
}

func (p *parser) atom() (float64, error) {
	if p.pos >= len(p.toks) {
		return 0, fmt.Errorf("unexpected end of formula")
	}
	t := p.toks[p.pos]
	switch {
	case t.kind == tNum:
		p.pos++
		return t.num, nil
	case t.kind == tOp && t.text == "(":
		p.pos++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		return v, p.expect(")")
	case t.kind == tIdent:
		p.pos++
		if p.peekOp("(") {
			return p.call(t)
		}
		v, ok := p.vars[t.text]
		if !ok {
			names := make([]string, 0, len(p.vars))
			for k := range p.vars {
				names = append(names, k)
			}
			sort.Strings(names)
			return 0, fmt.Errorf("unknown variable %q at offset %d (known: %s)", t.text, t.off, strings.Join(names, ", "))
		}
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %q at offset %d", t.text, t.off)
}

func (p *parser) call(fn token) (float64, error) {
	p.pos++ // "("
	var args []float64
	if !p.peekOp(")") {
		for {
			v, err := p.expr()
			if err != nil {
				return 0, err
			}
			args = append(args, v)
			if !p.peekOp(",") {
				break
			}
			p.pos++
		}
	}
	if err := p.expect(")"); err != nil {
		return 0, err
	}
	switch fn.text {
	case "min", "max":
		if len(args) < 1 {
			return 0, fmt.Errorf("%s() needs at least one argument", fn.text)
		}
		v := args[0]
		for _, a := range args[1:] {
			if fn.text == "min" {
				v = math.Min(v, a)
			} else {
				v = math.Max(v, a)
			}
		}
		return v, nil
	case "ceil", "floor", "log2", "sqrt":
		if len(args) != 1 {
			return 0, fmt.Errorf("%s() takes one argument, got %d", fn.text, len(args))
		}
		switch fn.text {
		case "ceil":
			return math.Ceil(args[0]), nil
		case "floor":
			return math.Floor(args[0]), nil
		case "log2":
			if args[0] <= 0 {
				return 0, fmt.Errorf("log2 of %g at offset %d", args[0], fn.off)
			}
			return math.Log2(args[0]), nil
		default:
			if args[0] < 0 {
				return 0, fmt.Errorf("sqrt of %g at offset %d", args[0], fn.off)
			}
			return math.Sqrt(args[0]), nil
		}
	}
	return 0, fmt.Errorf("unknown function %q at offset %d (known: min, max, ceil, floor, log2, sqrt)", fn.text, fn.off)
}
