# T family: backward rules written by hand (matmul, softmax cross-entropy, one attention head,
# layer norm) beside torch float64 autograd on the documents' inputs.


# T1-T4 share one job (one torch import); each ID still writes results/<ID>/ and its own meta.json.
rule tensor_rules:
    output:
        t1_values="results/T1/values.csv",
        t1_matrices="results/T1/matrices.csv",
        meta_T1="results/T1/meta.json",
        t2_values="results/T2/values.csv",
        t2_matrices="results/T2/matrices.csv",
        meta_T2="results/T2/meta.json",
        t3_values="results/T3/values.csv",
        t3_matrices="results/T3/matrices.csv",
        t3_control="results/T3/control.csv",
        meta_T3="results/T3/meta.json",
        t4_values="results/T4/values.csv",
        t4_matrices="results/T4/matrices.csv",
        meta_T4="results/T4/meta.json",
    params:
        args=dict(
            T1=config["tensor"]["matmul"],
            T2=config["tensor"]["softmax"],
            T3=config["tensor"]["attention"],
            T4=config["tensor"]["layernorm"],
        ),
        prov=prov("adbench.tensor.probes", "adbench.tensor.rules"),
    log:
        "logs/tensor_rules.log",
    benchmark:
        "benchmarks/tensor_rules.tsv"
    conda:
        ENV
    script:
        "../../scripts/tensor_rules.py"

register(
    "tensor",
    *[f"results/T{i}/values.csv" for i in range(1, 5)],
    *[f"results/T{i}/meta.json" for i in range(1, 5)],
    *[f"results/T{i}/matrices.csv" for i in range(1, 5)],
    "results/T3/control.csv",
)
