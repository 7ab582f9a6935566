// Data-parallel SGD on a linear model: what a trainer does with trnccl, in C++.
//
// Each rank (a thread here, with its own emulated NeuronCore and communicator) holds its own
// shard of a synthetic regression problem y = X w* + noise. Every step it computes the
// gradient of its mean squared error, the ranks average the gradients with one
// trncclAllReduce(trncclAvg), and every rank applies the same update; so the weights stay
// identical on every rank and converge to w*. Buffers are host memory, which trnccl accepts.
//
// Built as a user builds it (examples/standalone/CMakeLists.txt: find_package(trnccl)):
//   cmake -S examples/standalone -B build-sgd -DCMAKE_PREFIX_PATH=<trnccl prefix>
//   cmake --build build-sgd && build-sgd/train_sgd [ranks] [steps]
// Prints the loss every 25 steps and "OK" when the weights agree and reached w*.
#include <trnccl/trnccl.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kFeatures = 16;
constexpr int kSamplesPerRank = 512;
constexpr float kLearningRate = 0.05f;

void check(trncclResult_t result, const char* what) {
  if (result != trncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + trncclGetErrorString(result) + ": " +
                             trncclGetLastError(nullptr));
  }
}

void checkRt(trnrtError_t error, const char* what) {
  if (error != trnrtSuccess) {
    throw std::runtime_error(std::string(what) + ": " + trnrtGetErrorString(error) + ": " +
                             trnrtGetLastErrorMessage());
  }
}

std::vector<float> trueWeights() {
  std::vector<float> w(kFeatures);
  for (int j = 0; j < kFeatures; ++j) w[j] = std::sin(1.0f + j);
  return w;
}

// This rank's shard: features X (row-major) and targets y.
struct Shard {
  std::vector<float> x, y;
};

Shard makeShard(int rank) {
  std::mt19937 gen(1234 + rank);
  std::normal_distribution<float> normal;
  const std::vector<float> w = trueWeights();
  Shard s{std::vector<float>(kSamplesPerRank * kFeatures), std::vector<float>(kSamplesPerRank)};
  for (int i = 0; i < kSamplesPerRank; ++i) {
    float dot = 0;
    for (int j = 0; j < kFeatures; ++j) {
      s.x[i * kFeatures + j] = normal(gen);
      dot += s.x[i * kFeatures + j] * w[j];
    }
    s.y[i] = dot + 0.01f * normal(gen);
  }
  return s;
}

// Mean squared error of w on the shard; writes its gradient (followed by the loss) to grad.
void lossAndGradient(const Shard& s, const std::vector<float>& w, std::vector<float>& grad) {
  std::fill(grad.begin(), grad.end(), 0.0f);
  float loss = 0;
  for (int i = 0; i < kSamplesPerRank; ++i) {
    float err = -s.y[i];
    for (int j = 0; j < kFeatures; ++j) err += s.x[i * kFeatures + j] * w[j];
    loss += err * err;
    for (int j = 0; j < kFeatures; ++j) grad[j] += 2 * err * s.x[i * kFeatures + j];
  }
  for (int j = 0; j < kFeatures; ++j) grad[j] /= kSamplesPerRank;
  grad[kFeatures] = loss / kSamplesPerRank;
}

struct Outcome {
  std::vector<float> weights;
  std::string error;
};

void train(int rank, int ranks, int steps, const trncclUniqueId& id, Outcome& out) {
  try {
    checkRt(trnrtSetDevice(rank), "trnrtSetDevice");
    trncclComm_t comm = nullptr;
    check(trncclCommInitRank(&comm, ranks, id, rank), "trncclCommInitRank");
    trnrtStream_t stream = nullptr;
    checkRt(trnrtStreamCreate(&stream), "trnrtStreamCreate");
    const Shard shard = makeShard(rank);
    std::vector<float> w(kFeatures, 0.0f);
    std::vector<float> grad(kFeatures + 1);  // the gradient, then the loss: one all-reduce
    for (int step = 0; step < steps; ++step) {
      lossAndGradient(shard, w, grad);
      check(trncclAllReduce(grad.data(), grad.data(), grad.size(), trncclFloat32, trncclAvg, comm,
                            stream),
            "trncclAllReduce");
      checkRt(trnrtStreamSynchronize(stream), "trnrtStreamSynchronize");
      for (int j = 0; j < kFeatures; ++j) w[j] -= kLearningRate * grad[j];
      if (rank == 0 && (step % 25 == 0 || step == steps - 1)) {
        std::printf("step %4d  loss %.6f\n", step, grad[kFeatures]);
      }
    }
    checkRt(trnrtStreamDestroy(stream), "trnrtStreamDestroy");
    check(trncclCommDestroy(comm), "trncclCommDestroy");
    out.weights = w;
  } catch (const std::exception& e) {
    out.error = e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 4;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  trncclUniqueId id;
  check(trncclGetUniqueId(&id), "trncclGetUniqueId");
  std::vector<Outcome> outcomes(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back(train, r, ranks, steps, std::cref(id), std::ref(outcomes[r]));
  }
  for (auto& t : threads) t.join();
  const std::vector<float> target = trueWeights();
  bool ok = true;
  for (int r = 0; r < ranks; ++r) {
    if (!outcomes[r].error.empty()) {
      std::fprintf(stderr, "rank %d: %s\n", r, outcomes[r].error.c_str());
      ok = false;
    } else if (outcomes[r].weights != outcomes[0].weights) {
      std::fprintf(stderr, "rank %d: weights differ from rank 0's\n", r);
      ok = false;
    }
  }
  float maxError = 0;
  for (int j = 0; ok && j < kFeatures; ++j) {
    maxError = std::max(maxError, std::fabs(outcomes[0].weights[j] - target[j]));
  }
  ok = ok && maxError < 0.01f;
  std::printf("%s: %d ranks, %d steps, weights identical on every rank, max |w - w*| = %g\n",
              ok ? "OK" : "FAILED", ranks, steps, maxError);
  return ok ? 0 : 1;
}
