//! Reading a request's `params`: that it is an object, and the members a method looks up in it
//! (a looked-up member sent twice is refused: a checker and a handler must never see different
//! values).

use crate::wire::frame::Found;
use crate::wire::json::Json;
use crate::wire::request::Request;

pub(crate) fn params_object<'i>(req: &Request<'i>) -> Result<Option<Json<'i>>, &'static str> {
    match req.params {
        None => Ok(None),
        Some(p) if p.members().is_some() => Ok(Some(p)),
        Some(_) => Err("Invalid params: params must be an object"),
    }
}

/// The values of members the checking pass recorded; `None` when one of them is repeated.
pub(crate) fn once<'i, const K: usize>(found: [Found<'i>; K]) -> Option<[Option<Json<'i>>; K]> {
    let mut values = [None; K];
    for (value, f) in values.iter_mut().zip(found) {
        match f {
            Found::Repeated => return None,
            f => *value = f.once(),
        }
    }
    Some(values)
}

/// Looks up members of a params object; a duplicate of a looked-up member is an error.
pub(crate) fn members<'i, const K: usize>(
    params: Option<Json<'i>>,
    names: [&str; K],
) -> Result<[Option<Json<'i>>; K], &'static str> {
    let mut found = [None; K];
    members_into(params, &names, &mut found).map(|()| found)
}

/// [`members`] for any number of names: one copy of the code, not one per `K`.
fn members_into<'i>(
    params: Option<Json<'i>>,
    names: &[&str],
    found: &mut [Option<Json<'i>>],
) -> Result<(), &'static str> {
    let Some(members) = params.and_then(|p| p.members()) else {
        return Ok(());
    };
    for (key, value) in members {
        if let Some(i) = names.iter().position(|n| key.eq_str(n)) {
            let slot = found.get_mut(i).ok_or("Invalid params")?;
            if slot.is_some() {
                return Err("Invalid params: duplicate member");
            }
            *slot = Some(value);
        }
    }
    Ok(())
}
