"""Stable Baselines3's A2C, PPO and DQN updates on a forced replay, in float32 numpy.

The extended-environment conversion (``bib.reflection.sb3``) trains SB3's ``MlpPolicy`` networks
on a replay of a history with every action forced. Observations are discrete and fed one-hot, so a
network only ever sees ``num_observations`` distinct inputs: each update evaluates the network on
those rows once and gathers per sample, which is the same loss and the same gradient as SB3's
per-sample batch (only the order of float sums differs). Initial weights, hyperparameters and
optimizer settings are read from an SB3 model built with the run seed; the formulas are SB3 2.x's
(``A2C.train``, ``PPO.train``, ``DQN.train``, ``RolloutBuffer.compute_returns_and_advantage``) and
torch's (``RMSprop``, ``Adam``, ``clip_grad_norm_``, ``smooth_l1_loss``), and
``tests/test_reflection_sb3.py`` checks them against SB3 itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

F32 = np.float32


class Flat:
    """A module's parameters as one float32 vector, with a view per tensor (in ``parameters()`` order)."""

    def __init__(self, module: Any) -> None:
        arrays = [p.detach().numpy().astype(F32) for p in module.parameters()]
        self.shapes = [a.shape for a in arrays]
        self.vector = np.concatenate([a.ravel() for a in arrays])

    def views(self, vector: np.ndarray) -> list[np.ndarray]:
        """Views of ``vector`` shaped as the parameters."""
        out, start = [], 0
        for shape in self.shapes:
            size = int(np.prod(shape))
            out.append(vector[start : start + size].reshape(shape))
            start += size
        return out


def clip_grad_norm(grad: np.ndarray, max_norm: float) -> None:
    """torch.nn.utils.clip_grad_norm_ (2-norm over all gradients) on the flat gradient, in place."""
    total = float(np.sqrt(np.dot(grad, grad)))
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        grad *= F32(coef)


class RMSprop:
    """torch.optim.RMSprop (no momentum, not centered, no weight decay) on a flat vector."""

    def __init__(self, group: dict[str, Any], size: int) -> None:
        if group.get("momentum", 0) or group.get("centered", False) or group.get("weight_decay", 0):
            raise ValueError("only plain RMSprop is implemented")
        self.lr, self.alpha, self.eps = F32(group["lr"]), F32(group["alpha"]), F32(group["eps"])
        self.square = np.zeros(size, dtype=F32)

    def step(self, param: np.ndarray, grad: np.ndarray) -> None:
        s = self.square
        s *= self.alpha
        s += (1 - self.alpha) * grad * grad
        param -= self.lr * grad / (np.sqrt(s) + self.eps)


class Adam:
    """torch.optim.Adam (no weight decay, no amsgrad) on a flat vector; ``state``/``load`` checkpoint it."""

    def __init__(self, group: dict[str, Any], size: int) -> None:
        if group.get("weight_decay", 0) or group.get("amsgrad", False):
            raise ValueError("only plain Adam is implemented")
        self.lr, self.eps = float(group["lr"]), F32(group["eps"])
        self.b1, self.b2 = (float(b) for b in group["betas"])
        self.m = np.zeros(size, dtype=F32)
        self.v = np.zeros(size, dtype=F32)
        self.t = 0

    def step(self, param: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        c1 = 1 - self.b1**self.t
        c2 = F32(np.sqrt(1 - self.b2**self.t))
        b1, b2 = F32(self.b1), F32(self.b2)
        m, v = self.m, self.v
        m *= b1
        m += (1 - b1) * grad
        v *= b2
        v += (1 - b2) * grad * grad
        param -= F32(self.lr / c1) * m / (np.sqrt(v) / c2 + self.eps)

    def state(self) -> tuple:
        return (self.m.copy(), self.v.copy(), self.t)

    def load(self, state: tuple) -> None:
        m, v, self.t = state
        self.m, self.v = m.copy(), v.copy()


# -- actor-critic (A2C, PPO): two tanh towers on the one-hot observation --------------------------


class ActorCritic:
    """SB3's ActorCriticPolicy for Discrete observations and actions, evaluated on all observations."""

    def __init__(self, params: list[np.ndarray]) -> None:
        self.params = params  # pi W1 b1 W2 b2, vf W1 b1 W2 b2, action W b, value W b

    def forward(self) -> tuple:
        p1w, p1b, p2w, p2b, v1w, v1b, v2w, v2b, aw, ab, vw, vb = self.params
        ph1 = np.tanh(p1w.T + p1b)
        ph2 = np.tanh(ph1 @ p2w.T + p2b)
        logits = ph2 @ aw.T + ab
        vh1 = np.tanh(v1w.T + v1b)
        vh2 = np.tanh(vh1 @ v2w.T + v2b)
        values = (vh2 @ vw.T + vb)[:, 0]
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return (ph1, ph2, vh1, vh2), logp, values

    def backward(self, cache: tuple, logp: np.ndarray, dlogp: np.ndarray, dvalues: np.ndarray) -> list[np.ndarray]:
        """Gradients of the parameters given d loss / d log-probabilities and d loss / d values."""
        ph1, ph2, vh1, vh2 = cache
        p1w, p1b, p2w, p2b, v1w, v1b, v2w, v2b, aw, ab, vw, vb = self.params
        probs = np.exp(logp)
        dlogits = dlogp - probs * dlogp.sum(axis=1, keepdims=True)
        g_aw, g_ab = dlogits.T @ ph2, dlogits.sum(axis=0)
        dz2 = (dlogits @ aw) * (1 - ph2 * ph2)
        g_p2w, g_p2b = dz2.T @ ph1, dz2.sum(axis=0)
        dz1 = (dz2 @ p2w) * (1 - ph1 * ph1)
        g_p1w, g_p1b = dz1.T.copy(), dz1.sum(axis=0)
        dv = dvalues[:, None]
        g_vw, g_vb = dv.T @ vh2, dv.sum(axis=0)
        dz2 = (dv @ vw) * (1 - vh2 * vh2)
        g_v2w, g_v2b = dz2.T @ vh1, dz2.sum(axis=0)
        dz1 = (dz2 @ v2w) * (1 - vh1 * vh1)
        g_v1w, g_v1b = dz1.T.copy(), dz1.sum(axis=0)
        return [g_p1w, g_p1b, g_p2w, g_p2b, g_v1w, g_v1b, g_v2w, g_v2b, g_aw, g_ab, g_vw, g_vb]


def _entropy_grad(logp: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The gradient of ``sum_o weight[o] * entropy(o)`` with respect to the logits, ``-w p (logp + H)``.

    Its rows sum to zero, so passed to :meth:`ActorCritic.backward` as a d/d logp term it reaches
    the logits unchanged.
    """
    probs = np.exp(logp)
    entropy = -(probs * logp).sum(axis=1, keepdims=True)
    return weight[:, None] * (-probs * (logp + entropy))


def gae(rewards: np.ndarray, values: np.ndarray, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """RolloutBuffer.compute_returns_and_advantage for one episode that ends (done) after the last step."""
    r, v = rewards.tolist(), values.tolist()
    n = len(r)
    adv = [0.0] * n
    lam_g = gamma * lam
    last = 0.0
    for t in range(n - 1, -1, -1):
        nxt = v[t + 1] if t < n - 1 else 0.0
        last = r[t] + gamma * nxt - v[t] + lam_g * last
        adv[t] = last
    out = np.asarray(adv, dtype=F32)
    return out, out + values


def train_actor_critic(
    model: Any, observations: np.ndarray, actions: np.ndarray, rewards: np.ndarray, ppo: bool, initial: Flat | None = None
) -> list[list[float]]:
    """One rollout of ``len(actions)`` forced steps, then A2C's one update or PPO's ``n_epochs``.

    ``observations`` has one more entry than ``actions`` (the terminal observation of the replay);
    ``rewards[t]`` follows ``actions[t]``. Returns the policy's action probabilities per observation.
    """
    flat = Flat(model.policy) if initial is None else initial
    theta = flat.vector.copy()
    net = ActorCritic(flat.views(theta))
    group = model.policy.optimizer.param_groups[0]
    opt: Adam | RMSprop = Adam(group, theta.size) if ppo else RMSprop(group, theta.size)
    n_obs, n_act = net.params[0].shape[1], net.params[8].shape[0]
    n = len(actions)
    obs, act = observations[:n], actions
    _, logp0, values0 = net.forward()
    values = values0[obs]
    old_logp = logp0[obs, act]
    reward = rewards.astype(F32).copy()
    reward[-1] += F32(model.gamma) * values0[observations[n]]  # time-out bootstrap of the last step
    adv, returns = gae(reward, values, model.gamma, model.gae_lambda)
    cell = obs * n_act + act
    counts = np.bincount(obs, minlength=n_obs).astype(F32)
    ret_sums = np.bincount(obs, weights=returns, minlength=n_obs).astype(F32)
    ent, vf = F32(model.ent_coef), F32(model.vf_coef)
    epochs = model.n_epochs if ppo else 1
    clip = F32(model.clip_range(1.0)) if ppo else None
    for _ in range(epochs):
        cache, logp, values_o = net.forward()
        a = adv
        if model.normalize_advantage and n > 1:
            a = (adv - adv.mean()) / (adv.std(ddof=1) + F32(1e-8))
        if ppo:
            ratio = np.exp(logp[obs, act] - old_logp)
            clipped = np.clip(ratio, 1 - clip, 1 + clip)
            passes = (a * ratio < a * clipped) | ((ratio >= 1 - clip) & (ratio <= 1 + clip))
            per = -a * ratio * passes / F32(n)
        else:
            per = -a / F32(n)
        dlogp = np.bincount(cell, weights=per, minlength=n_obs * n_act).astype(F32).reshape(n_obs, n_act)
        if ent:
            dlogp = dlogp + _entropy_grad(logp, -ent * counts / F32(n)).astype(F32)
        dvalues = vf * F32(2.0) * (counts * values_o - ret_sums) / F32(n)
        grad = np.concatenate([g.ravel() for g in net.backward(cache, logp, dlogp, dvalues)])
        clip_grad_norm(grad, model.max_grad_norm)
        opt.step(theta, grad)
    _, logp, _ = net.forward()
    return np.exp(logp).astype(np.float64).tolist()


# -- DQN: a relu MLP, Huber loss against the target network --------------------------------------


class QNet:
    """SB3's QNetwork (MlpPolicy: 64-64 ReLU) evaluated on every one-hot observation."""

    def __init__(self, params: list[np.ndarray]) -> None:
        self.params = params

    def forward(self) -> tuple:
        w1, b1, w2, b2, w3, b3 = self.params
        z1 = w1.T + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2.T + b2
        h2 = np.maximum(z2, 0)
        return (z1, h1, z2, h2), h2 @ w3.T + b3

    def backward(self, cache: tuple, dq: np.ndarray) -> list[np.ndarray]:
        z1, h1, z2, h2 = cache
        _, _, w2, _, w3, _ = self.params
        g_w3, g_b3 = dq.T @ h2, dq.sum(axis=0)
        dz2 = (dq @ w3) * (z2 > 0)
        g_w2, g_b2 = dz2.T @ h1, dz2.sum(axis=0)
        dz1 = (dz2 @ w2) * (z1 > 0)
        return [dz1.T.copy(), dz1.sum(axis=0), g_w2, g_b2, g_w3, g_b3]


class DQNTrainer:
    """SB3 DQN on a forced replay, resumable: its state after t steps depends on the first t transitions only."""

    def __init__(self, model: Any, seed: int) -> None:
        self.model = model
        self.flat = Flat(model.policy.q_net)
        self.initial_target = Flat(model.policy.q_net_target).vector
        self.group = dict(model.policy.optimizer.param_groups[0])
        self.seed = seed
        self.gradient_steps = 0  # over all trainings (the cost measure the tests check)

    def fresh(self) -> tuple:
        """The state of a model that has not trained: (q, target, optimizer, minibatch RNG, steps done)."""
        opt = Adam(self.group, self.flat.vector.size)
        rng = np.random.default_rng([self.seed, 0xD0])
        return (self.flat.vector.copy(), self.initial_target.copy(), opt.state(), rng.bit_generator.state, 0)

    def train(self, state: tuple, observations: np.ndarray, actions: np.ndarray, rewards: np.ndarray, steps: int) -> tuple:
        """Continue ``state`` to ``steps`` steps of the replay (one gradient step per 4, as SB3 with train_freq 4)."""
        m = self.model
        q_vector, target_vector, opt_state, rng_state, done = state
        theta = q_vector.copy()
        target = target_vector.copy()
        net = QNet(self.flat.views(theta))
        opt = Adam(self.group, theta.size)
        opt.load(opt_state)
        rng = np.random.default_rng()
        rng.bit_generator.state = rng_state
        n_obs, n_act = net.params[0].shape[1], net.params[4].shape[0]
        gamma = F32(m.gamma)
        interval = m.target_update_interval
        next_v = QNet(self.flat.views(target)).forward()[1].max(axis=1)
        for t in range(done + 4, steps + 1, 4):
            if t // interval > (t - 4) // interval:  # SB3's hard target update (tau = 1) at its _on_step
                target = theta.copy()
                next_v = QNet(self.flat.views(target)).forward()[1].max(axis=1)
            idx = rng.integers(0, t, size=m.batch_size)
            o, a = observations[idx], actions[idx]
            goal = rewards[idx] + gamma * next_v[observations[idx + 1]]
            cache, q = net.forward()
            diff = q[o, a] - goal
            g = np.where(np.abs(diff) < 1, diff, np.sign(diff)) / F32(len(idx))
            dq = np.bincount(o * n_act + a, weights=g, minlength=n_obs * n_act).astype(F32).reshape(n_obs, n_act)
            grad = np.concatenate([x.ravel() for x in net.backward(cache, dq)])
            clip_grad_norm(grad, m.max_grad_norm)
            opt.step(theta, grad)
            self.gradient_steps += 1
        return (theta, target, opt.state(), rng.bit_generator.state, steps)

    def table(self, state: tuple) -> list[list[float]]:
        """predict(deterministic=False): epsilon-greedy with SB3's final epsilon (reached when training ends)."""
        q = QNet(self.flat.views(state[0])).forward()[1]
        n_obs, n_act = q.shape
        eps = self.model.exploration_final_eps
        table = np.full((n_obs, n_act), eps / n_act)
        table[np.arange(n_obs), q.argmax(axis=1)] += 1.0 - eps
        return table.tolist()
