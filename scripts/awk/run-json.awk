# run-json.awk - one run of `storm run` as one JSON document.
# Needs json.awk, kv-json.awk and result-json.awk; no input, only -v:
#
#   schema storm label       scalars
#   meta params env          "TYPE KEY VALUE" files (see kv-json.awk)
#   result                   the module's result file
#   irq                      interrupts-json.awk's output
#   trace bpftrace           trace summaries (JSON), optional

BEGIN {
	printf "{\n  \"schema\": %d,\n  \"kind\": \"storm-run\",\n", schema
	printf "  \"storm\": %s,\n  \"label\": %s,\n", jstr(storm), jstr(label)
	printf "  \"run\": %s,\n", kv_object(meta, "  ")
	printf "  \"params\": %s,\n", kv_object(params, "  ")
	printf "  \"env\": %s,\n", kv_object(env, "  ")
	printf "  \"result\": %s,\n", result_object(result, "  ")
	printf "  \"interrupts\": %s", slurp(irq)
	if (trace != "")
		printf ",\n  \"trace\": %s", slurp(trace)
	if (bpftrace != "")
		printf ",\n  \"bpftrace\": %s", slurp(bpftrace)
	printf "\n}\n"
}
