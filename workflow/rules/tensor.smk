# T family: backward rules written by hand (matmul, softmax cross-entropy, one attention head,
# layer norm) beside torch float64 autograd on the documents' inputs.


# T1-T4 share one job (one torch import); each ID still writes results/<ID>/ and its own meta.json.
use rule measure as tensor_rules with:
    output:
        **id_outputs("T1", "values", "matrices", "saved"),
        **id_outputs("T2", "values", "matrices", "reductions", "averaging", "output_grads", "output_rows", "fused"),
        **id_outputs(
            "T3",
            "values",
            "matrices",
            "control",
            "mask",
            "mask_summary",
            "projections",
            "projection_weights",
            "multihead",
            "fused",
        ),
        **id_outputs("T4", "values", "matrices", "saved", "eps", "eps_effect"),
    params:
        **job(
            {mid: f"adbench.tensor.probes:measure_{mid.lower()}" for mid in ("T1", "T2", "T3", "T4")},
            args=dict(
                T1=config["tensor"]["matmul"],
                T2=config["tensor"]["softmax"],
                T3=config["tensor"]["attention"],
                T4=config["tensor"]["layernorm"],
            ),
        ),


register("tensor", rules.tensor_rules.output)
