// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC20Transfer {
    function transfer(address to, uint256 amount) external returns (bool);
}

/// @notice EIP-7702 batch sweeping. Deposit EOAs delegate their code to this contract (an
/// authorization their key signs offline); the gas tank then sends ONE transaction to this
/// deployment's `sweepBatch`, which calls `sweep` on each deposit, moving that deposit's tokens.
///
/// Who may move tokens, and why nobody else can:
/// - `sweepBatch` runs only on this deployment and only for `TANK`, an immutable fixed at deploy
///   time (immutables live in the code, so no storage slot of any deposit can change it);
/// - `sweep` runs only in a deposit's context and only when called by this deployment (`SELF`,
///   also an immutable): a direct call to a delegated deposit by anyone else, a token re-entering
///   it, or another contract reverts.
/// No storage is read or written: a deposit's storage is its own and may hold anything.
/// After a sweep the deposit is still an ordinary EOA: it receives tokens and native coin as
/// before and can be swept again; its key can still send transactions itself.
contract Sweeper {
    address public immutable TANK;
    address private immutable SELF;

    error Unauthorized();
    error LengthMismatch();
    error NotAContract(address token);
    error TransferFailed(address deposit, address token);

    constructor(address tank) {
        TANK = tank;
        SELF = address(this);
    }

    /// Sweeps `amounts[i]` of `tokens[i]` from `deposits[i]` to `to[i]`; any failure reverts all.
    function sweepBatch(
        address[] calldata deposits,
        address[] calldata tokens,
        address[] calldata to,
        uint256[] calldata amounts
    ) external {
        if (msg.sender != TANK || address(this) != SELF) revert Unauthorized();
        uint256 n = deposits.length;
        if (tokens.length != n || to.length != n || amounts.length != n) revert LengthMismatch();
        for (uint256 i; i < n; ) {
            // a high-level call: reverts when the deposit has no code (its authorization was not applied)
            Sweeper(payable(deposits[i])).sweep(tokens[i], to[i], amounts[i]);
            unchecked {
                ++i;
            }
        }
    }

    /// Runs as the deposit (delegated code): transfers `amount` of `token` to `to`.
    function sweep(address token, address to, uint256 amount) external {
        if (msg.sender != SELF || address(this) == SELF) revert Unauthorized();
        if (token.code.length == 0) revert NotAContract(token);
        // USDT-style tokens return nothing; others return a bool that must be true
        (bool ok, bytes memory ret) = token.call(abi.encodeCall(IERC20Transfer.transfer, (to, amount)));
        if (!ok || (ret.length != 0 && (ret.length < 32 || !abi.decode(ret, (bool))))) {
            revert TransferFailed(address(this), token);
        }
    }

    /// A delegated deposit keeps accepting native coin (gas top-ups, refunds).
    receive() external payable {}
}
