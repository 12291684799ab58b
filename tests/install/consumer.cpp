// The C++ twin of consumer.c: the same calls and the same output line, built
// with g++ -Wall -Wextra -Werror -pedantic against the installed headers (which
// must be C++-safe) and library, by tests/scripts/test_install.sh.
#define PC_STATIC_LINKING_ONLY
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <perfcast/analytic.h>
#include <perfcast/calib.h>
#include <perfcast/dataset.h>
#include <perfcast/dist.h>
#include <perfcast/hlo.h>
#include <perfcast/hlo_cost.h>
#include <perfcast/metrics.h>
#include <perfcast/npz.h>
#include <perfcast/perfcast.h>
#include <perfcast/prune.h>
#include <perfcast/safetensors.h>
#include <perfcast/synth.h>
#include <perfcast/train.h>
#include <perfcast/tune.h>

#include "consumer_run.h"

namespace {

struct runs_free {
    void operator()(pc_runs *r) const { pc_runs_free(r); }
};
struct calib_free {
    void operator()(pc_calib *c) const { pc_calib_free(c); }
};

int fail(const char *what, const pc_error &err) {
    std::fprintf(stderr, "consumer++: %s: %s\n", what, err.msg);
    return 1;
}

}  // namespace

int main() {
    pc_error err = {PC_OK, ""};
    if (std::string(pc_version()) != PC_VERSION_STRING) {
        std::fprintf(stderr, "consumer++: library %s, headers %s\n", pc_version(),
                     PC_VERSION_STRING);
        return 1;
    }

    pc_train_opts to = pc_train_opts_default();
    to.struct_size -= 8;
    if (pc_train_run(&to, nullptr, nullptr, nullptr, nullptr, &err) != PC_ERR_ARG ||
        !std::strstr(err.msg, "pc_train_opts.struct_size")) {
        std::fprintf(stderr, "consumer++: a wrong struct_size was not refused: %s\n", err.msg);
        return 1;
    }

    const pc_chip *chip = nullptr;
    for (int i = 0; i < pc_chip_builtin_count(); i++)
        if (std::string(pc_chip_builtin(i)->name) == "h100") chip = pc_chip_builtin(i);
    if (!chip) {
        std::fprintf(stderr, "consumer++: no built-in chip h100\n");
        return 1;
    }
    pc_tfm_cfg model;
    if (pc_tfm_preset("llama3-8b", &model, &err) != PC_OK) return fail("pc_tfm_preset", err);
    pc_param_counts params;
    pc_tfm_params(&model, &params);

    const std::string json = CONSUMER_RUN_JSON;
    pc_runs *raw_runs = nullptr;
    if (pc_runs_parse(json.data(), json.size(), "consumer", &raw_runs, &err) != PC_OK)
        return fail("pc_runs_parse", err);
    std::unique_ptr<pc_runs, runs_free> runs(raw_runs);
    if (pc_runs_count(runs.get()) != 1 || pc_runs_problem(runs.get(), 0)) {
        std::fprintf(stderr, "consumer++: run: %s\n", pc_runs_problem(runs.get(), 0));
        return 1;
    }
    pc_calib *raw_cal = nullptr;
    if (pc_calib_builtin(&raw_cal, &err) != PC_OK) return fail("pc_calib_builtin", err);
    std::unique_ptr<pc_calib, calib_free> cal(raw_cal);
    pc_run_pred pred;
    if (pc_run_predict(pc_runs_at(runs.get(), 0), cal.get(), &pred, &err) != PC_OK)
        return fail("pc_run_predict", err);
    if (!pred.expressed || !(pred.predicted > 0.0) || !(pred.ideal > 0.0)) {
        std::fprintf(stderr, "consumer++: run not predicted: %s\n", pred.why);
        return 1;
    }
    std::printf("perfcast %s chip %s llama3-8b params %.4g run %s measured %.4g s predicted %.6g s "
                "(ideal %.6g s, %s)\n",
                pc_version(), chip->name, params.total, pc_runs_at(runs.get(), 0)->id,
                pred.measured, pred.predicted, pred.ideal, pc_calib_origin(cal.get()));
    return 0;
}
