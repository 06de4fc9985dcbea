"""Strings each chapter's executed outputs must contain: the post's numbers, computed.

Keys are chapter file stems. Every chapter in chapters/ needs an entry (a test
checks that), and every string must appear in that chapter's outputs (text,
HTML or LaTeX), which come from attnlib calls, never from typed prose.
"""

EXPECTED: dict[str, list[str]] = {
    "01-running-example": ["shape of X: (3, 2)", "[[1.  0. ]", "length of x3: 0.7071", "x1 . x3 = 0.5"],
    "02-compatibility-function": [
        "[[-0.9413 -1.482  -1.2207]",
        "dot-product matrix symmetric? True",
        "additive: 18 tanh evaluations",
        "additive: 67,108,864 tanh evaluations, 67,108,864 hidden values held",
        "dot:      0 tanh evaluations, 0 hidden values held, 67,108,864 multiplications, 1 matrix product",
        "256 MiB",
        "difference of the two sides, d_model=2, d_k=1: 0",
        "d_model=12, d_k=6: 864 monomials, difference = 0, identity holds: True",
        "equal up to floating-point rounding: True",
    ],
    "03-queries-keys-values": [
        "W_Q: (2, 3)",
        "V: (3, 1)",
        "scores identical:  True",
        "weights identical: True",
        "v2 = [1. 1.]",
        "v3 = [1.  0.5]",
        "[[0.6155 0.3845]",
        "[[1.     0.3845]",
        "first column of the new outputs equals 1: True",
    ],
    "04-full-formula": [
        "divisor sqrt(d_k) = 1.4142",
        "[[0.7071 0.     0.3536]",
        "[[0.4555 0.2246 0.3199]",
        "[[0.6155 0.3845]",
        "weights of token 1 to 6 places: [0.455527 0.224606 0.319866]",
        "sum over j:           [0.6155 0.3845]",
        "[[0.5065 0.1863 0.3072]",
    ],
    "05-scaling": [],
    "06-walkthrough": [],
    "07-unscaled-vs-scaled": [],
    "08-multi-head": [
        "d_model = 512, h =  8: 1,048,576 parameters (sympy: 1048576)",
        "total:                         P =  4*d_model**2",
        "does the total depend on h?         False",
        "  query x1: [0.5065, 0.1863, 0.3072]",
        "  query x2: [0.1863, 0.5065, 0.3072]",
        "single head, query x1: [0.4555, 0.2246, 0.3199]",
        "per-block weights match: True",
    ],
    "09-self-cross-masked": [
        "masked row 2 (exact, 4 decimals): [0.3302, 0.6698, 0.0000]",
        "masked row 2 (3 decimals):        [0.330, 0.670, 0.000]",
        "e^0 = 1.0000,  e^0.7071 = 2.0281,  e^-inf = 0.0000",
        "Z = 3.0281",
        "Z_2 = 1 + exp(sqrt(2)/2)",
        "masked.weights[1, 2] == 0.0: True",
        "row 2, unmasked scaled scores: [0.0000, 0.7071, 0.3536]",
        "weights: (2, 3)  output: (2, 2)",
    ],
    "10-path-length": [
        "x1 -> h1 -> h2 -> h3",
        "recurrent transitions between the endpoints: 2",
        "S_31 before scaling: 0.5",
        "S_31 after scaling by sqrt(2): 0.3536",
        "attention steps from x1 to x3: 1",
        "n =  16: longest RNN path  15, longest self-attention path 1",
    ],
    "11-positional-information": [],
    "12-one-story": [],
    "13-closing": [],
}
