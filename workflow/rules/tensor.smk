# T family: backward rules written by hand (matmul, softmax cross-entropy, one attention head,
# layer norm) beside torch float64 autograd on the documents' inputs. One rule per ID.


rule tensor_t1:
    output:
        values="results/T1/values.csv",
        matrices="results/T1/matrices.csv",
        meta="results/T1/meta.json",
    params:
        args=config["tensor"]["matmul"],
        prov=prov("adbench.tensor.probes", "adbench.tensor.rules"),
    log:
        "logs/tensor_t1.log",
    benchmark:
        "benchmarks/tensor_t1.tsv"
    conda:
        ENV
    script:
        "../../scripts/tensor_t1.py"


rule tensor_t2:
    output:
        values="results/T2/values.csv",
        matrices="results/T2/matrices.csv",
        meta="results/T2/meta.json",
    params:
        args=config["tensor"]["softmax"],
        prov=prov("adbench.tensor.probes", "adbench.tensor.rules"),
    log:
        "logs/tensor_t2.log",
    benchmark:
        "benchmarks/tensor_t2.tsv"
    conda:
        ENV
    script:
        "../../scripts/tensor_t2.py"


rule tensor_t3:
    output:
        values="results/T3/values.csv",
        matrices="results/T3/matrices.csv",
        control="results/T3/control.csv",
        meta="results/T3/meta.json",
    params:
        args=config["tensor"]["attention"],
        prov=prov("adbench.tensor.probes", "adbench.tensor.rules"),
    log:
        "logs/tensor_t3.log",
    benchmark:
        "benchmarks/tensor_t3.tsv"
    conda:
        ENV
    script:
        "../../scripts/tensor_t3.py"


rule tensor_t4:
    output:
        values="results/T4/values.csv",
        matrices="results/T4/matrices.csv",
        meta="results/T4/meta.json",
    params:
        args=config["tensor"]["layernorm"],
        prov=prov("adbench.tensor.probes", "adbench.tensor.rules"),
    log:
        "logs/tensor_t4.log",
    benchmark:
        "benchmarks/tensor_t4.tsv"
    conda:
        ENV
    script:
        "../../scripts/tensor_t4.py"


register(
    "tensor",
    *[f"results/T{i}/values.csv" for i in range(1, 5)],
    *[f"results/T{i}/meta.json" for i in range(1, 5)],
    *[f"results/T{i}/matrices.csv" for i in range(1, 5)],
    "results/T3/control.csv",
)
